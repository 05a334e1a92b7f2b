import type { ListingDefinition } from './listing-definition';
import type { Condition, ListingCriteria } from './listing-criteria';
import type { RowEstimates } from './listing-planner';
import type { Bucket } from './listing.repository';

/** A table whose size no total tells yet is taken to be this large: plans then favour indexes. */
const UNKNOWN_TABLE_ROWS = 1_000_000;
/** Rows one value of a bounded column (a user, an address, an organization) is taken to have. */
const BOUNDED_ROWS = 1_000;
/** Shares of the rows a filter is taken to keep when nothing counted says better. */
const GUESSED_SHARE = { equals: 0.01, range: 0.25, prefix: 0.02 };

/** A histogram of the table's rows by a column: buckets of `size` ids, or of `size` ms. */
export interface Histogram {
  size: number;
  buckets: readonly Bucket[];
}

export interface EstimateSources {
  /** The rows of a set of conditions, where a cached total or a rollup tells them. */
  total(conditions: Condition[]): number | undefined;
  /** The table's histogram by `column` (`id` or a timestamp), when counted. */
  histogram(column: string): Histogram | undefined;
}

/**
 * Estimates of the rows a criteria's conditions match: exact for a set counted before, else the
 * table's rows times each condition's share (docs/architecture.md, The planner). Implied conditions
 * narrow the index a walk reads but not the matches.
 */
export function rowEstimates(
  definition: ListingDefinition,
  criteria: ListingCriteria,
  sources: EstimateSources,
): RowEstimates {
  // The scope is a condition like any other: an index that does not start with it reads the
  // other organizations' rows too.
  const filters = criteria.conditions;
  const implied = criteria.implied ?? [];
  const tableRows = sources.total([]) ?? UNKNOWN_TABLE_ROWS;
  const share = (condition: Condition): number => {
    const counted = implied.includes(condition) ? undefined : sources.total([condition]);
    if (counted !== undefined) return counted / Math.max(1, tableRows);
    const column = condition.binds?.column;
    if (column && condition.between) {
      const histogram = sources.histogram(column);
      if (histogram) return shareBetween(histogram, condition.between);
    }
    if (!column || condition.binds?.range) {
      return column?.startsWith('(') ? GUESSED_SHARE.prefix : GUESSED_SHARE.range;
    }
    const filter = Object.values(definition.filters).find((f) => f.column === column);
    if (filter?.values?.length) return 1 / filter.values.length;
    const bounded = definition.indexes.some(
      (path) =>
        (path.bounded || path.unique) && path.equals.length === 1 && path.equals[0] === column,
    );
    return bounded ? Math.min(1, BOUNDED_ROWS / tableRows) : GUESSED_SHARE.equals;
  };
  const rowsOf = (conditions: Condition[]): number => {
    const counted = conditions.some((c) => implied.includes(c))
      ? undefined
      : sources.total(conditions);
    if (counted !== undefined) return counted;
    return conditions.reduce((rows, condition) => rows * share(condition), tableRows);
  };
  return {
    matches: rowsOf(filters),
    rows: (equals, ranges) =>
      rowsOf(
        [...filters, ...implied].filter(
          ({ binds }) =>
            binds && (binds.range ? ranges.includes(binds.column) : equals.includes(binds.column)),
        ),
      ),
  };
}

/** The share of a histogram's rows whose buckets lie within `between` (inclusive). */
function shareBetween(
  { size, buckets }: Histogram,
  { from = -Infinity, to = Infinity }: { from?: number; to?: number },
): number {
  let inside = 0;
  let all = 0;
  for (const [index, rows] of buckets) {
    all += rows;
    if ((index + 1) * size > from && index * size <= to) inside += rows;
  }
  return all ? inside / all : 1;
}
