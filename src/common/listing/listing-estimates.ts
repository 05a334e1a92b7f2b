import type { ListingDefinition } from './listing-definition';
import { Condition, criteriaKey, ListingCriteria } from './listing-criteria';
import type { RowEstimates } from './listing-planner';

/** A table whose size no total tells yet is taken to be this large: plans then favour indexes. */
const UNKNOWN_TABLE_ROWS = 1_000_000;
/** Rows one value of a bounded column (a user, an address, an organization) is taken to have. */
const BOUNDED_ROWS = 1_000;
/** Shares of the rows a filter is taken to keep when nothing counted says better. */
const GUESSED_SHARE = { equals: 0.01, range: 0.25, id: 0.5, prefix: 0.02 };

/**
 * Estimates of the rows a criteria's conditions match, from the totals the count cache holds
 * (`total(key)`, the key being `criteriaKey`): exact for a set of conditions counted before,
 * otherwise the scope's rows times each condition's share (its own total's, or a guess from
 * what the listing declares: few values, a bounded column). Conditions are taken as independent.
 */
export function rowEstimates(
  definition: ListingDefinition,
  criteria: ListingCriteria,
  total: (key: string) => number | undefined,
): RowEstimates {
  const keyOf = (conditions: Condition[]) =>
    criteriaKey(definition.resource, { ...criteria, conditions });
  const scope = criteria.conditions.filter((c) => 'scope_organization_id' in c.params);
  const filters = criteria.conditions.filter((c) => !scope.includes(c));
  const scopeRows = total(keyOf(scope)) ?? UNKNOWN_TABLE_ROWS;
  const share = (condition: Condition): number => {
    const counted = total(keyOf([...scope, condition]));
    if (counted !== undefined) return counted / Math.max(1, scopeRows);
    const column = condition.binds?.column;
    if (condition.idRange) return GUESSED_SHARE.id;
    if (!column || condition.binds?.range) {
      return column?.startsWith('(') ? GUESSED_SHARE.prefix : GUESSED_SHARE.range;
    }
    const filter = Object.values(definition.filters).find((f) => f.column === column);
    if (filter?.values?.length) return 1 / filter.values.length;
    const bounded = definition.indexes.some(
      (path) =>
        (path.bounded || path.unique) && path.equals.length === 1 && path.equals[0] === column,
    );
    return bounded ? Math.min(1, BOUNDED_ROWS / scopeRows) : GUESSED_SHARE.equals;
  };
  const rowsOf = (conditions: Condition[]): number => {
    const counted = total(keyOf([...scope, ...conditions]));
    if (counted !== undefined) return counted;
    return conditions.reduce((rows, condition) => rows * share(condition), scopeRows);
  };
  return {
    matches: rowsOf(filters),
    rows: (equals, ranges) =>
      rowsOf(
        filters.filter(
          ({ binds }) =>
            binds && (binds.range ? ranges.includes(binds.column) : equals.includes(binds.column)),
        ),
      ),
  };
}
