import type { Principal } from '../auth/principal';
import { columnSql, ListingDefinition, SortDirection } from './listing-definition';
import { bind, BoundColumns, PRIMARY_KEY } from './listing-planner';
import type { ListingQuery } from './listing-query.dto';
import { instantOfSqlDatetime } from '../../database/row-values';

export interface Condition {
  /** SQL with named parameters, columns qualified with the alias `t`. */
  sql: string;
  /** The same condition for SQLite, where it needs another shape to be served by an index. */
  sqliteSql?: string;
  params: Record<string, unknown>;
  /** A bound on `t.id` alone (`after_id`, `before_id`): a range of the primary key. */
  idRange?: true;
  /** What a filter or the scope binds, for the planner's estimates. */
  binds?: { column: string; range: boolean };
  /** A range's bounds (inclusive), for estimates from a histogram: ids, or times in ms. */
  between?: { from?: number; to?: number };
  /**
   * `sql` as alternatives, one per column of a `prefix`, or of a `walkBound`: each read through its
   * own index (for a bound, `index`; none: the page's).
   */
  anyOf?: {
    column: string;
    sql: string;
    index?: string;
    /** Its matches that share less of the prefix with the other column, and their index. */
    unshared?: { sql: string; index: string };
  }[];
  /** `after_id` (ids above `bound`) or `before_id`: a keyset walk's total is counted per bucket. */
  keyset?: { bound: number; upwards: boolean };
}

/** What to select, independent of which page: the filters, the scope and the order. */
export interface ListingCriteria {
  conditions: Condition[];
  sortColumn: string;
  direction: SortDirection;
  /** What the filters and the scope bind, for the planner. */
  bound: BoundColumns;
  /** Conditions every matching row meets anyway (implied id bounds): not part of the key. */
  implied?: Condition[];
  /**
   * Where a walk's matches lie, as alternatives every match meets one of (a window on the changed
   * column, `walkBoundOf`): only the page reads it, each alternative on its own index.
   */
  walkBound?: Condition;
  /** The index the page reads through, named so that its plan cannot drift (undefined: any). */
  index?: string;
  /** The plan reads the filters' matches through `index` and sorts them (not a walk in order). */
  sorted?: boolean;
  /** The index the count reads through: the cheapest to count. */
  countIndex?: string;
  /** The index a histogram by the sort column reads through (it carries that column). */
  bucketIndex?: string;
  /** The sort column is unique (its index says so): ordered by it alone, ties cannot happen. */
  uniqueSort?: boolean;
  /** A walk tried before the sort (`trialWalk`), with the table's histogram by the sort column. */
  trial?: Trial;
}

/**
 * A walk on `index` in the sort's order, kept to about `entries` entries from `start` (an id, or a
 * time in ms: where the walk starts): in id order, `entries` ids; in time order, by the table's
 * histogram of the sort column.
 */
export interface Trial {
  index: string;
  entries: number;
  start?: number;
  /** Buckets of `size` ms, `[bucket, rows, …]`, ascending. */
  histogram?: {
    size: number;
    buckets: readonly (readonly [bucket: number, rows: number, ...rest: unknown[]])[];
  };
}

// `!` rather than a backslash, which MySQL string literals would treat as an escape themselves.
const LIKE_ESCAPE = '!';
const escapeLike = (value: string) => value.replace(/[!%_]/g, (char) => `${LIKE_ESCAPE}${char}`);

/** A validated query and the caller's principal as criteria, the token's organization scope in SQL. */
export function buildCriteria(
  definition: ListingDefinition,
  query: ListingQuery,
  principal: Principal,
): ListingCriteria {
  const descending = query.sort.startsWith('-');
  const sortColumn = descending ? query.sort.slice(1) : query.sort;
  const direction: SortDirection = descending ? 'DESC' : 'ASC';

  const conditions: Condition[] = [];
  const bound = { equals: new Set<string>(), ranges: new Set<string>() };
  if (principal.organizationId !== null && definition.organizationColumn !== null) {
    conditions.push({
      sql: `${columnSql(definition.organizationColumn)} = :scope_organization_id`,
      params: { scope_organization_id: principal.organizationId },
      binds: { column: definition.organizationColumn, range: false },
    });
    bound.equals.add(definition.organizationColumn);
  }
  const values = query as unknown as Record<string, unknown>;
  for (const [parameter, filter] of Object.entries(definition.filters)) {
    const value = values[parameter];
    if (value === undefined) continue;
    const binds = bind(bound, filter);
    const { operator, column, columns, exact } = filter;
    const name = `filter_${parameter}`;
    switch (operator) {
      case 'equals': {
        const sql = `${columnSql(column)} = :${name}`;
        conditions.push({
          // The collation's match, through the column's index, then only the same bytes.
          sql: exact
            ? `${sql} AND CAST(${columnSql(column)} AS BINARY) = CAST(:${name} AS BINARY)`
            : sql,
          ...(exact && { sqliteSql: sql }),
          params: { [name]: value },
          binds,
        });
        break;
      }
      case 'from':
      case 'to': {
        const sql = `${columnSql(column)} ${operator === 'from' ? '>=' : '<'} :${name}`;
        const at = value instanceof Date ? value.getTime() : undefined;
        const between =
          operator === 'from' ? { from: at } : { to: at === undefined ? undefined : at - 1 };
        conditions.push({ sql, params: { [name]: value }, binds, between });
        break;
      }
      case 'prefix': {
        const like = (c: string) => `${columnSql(c)} LIKE :${name} ESCAPE '${LIKE_ESCAPE}'`;
        // Printable ASCII only: the shared count compares only those, and collations fold other
        // characters differently (K, the Kelvin sign, is k in general_ci only).
        const shared = /^[\x20-\x7e]+$/.test(String(value)) ? filter.shared : undefined;
        // The counts below the value's length, in characters as the database counts them: a list,
        // so that each is a range of the index with the column's prefix after it.
        const fewer = shared ? [...String(value)].slice(0, shared.most + 1).map((_, i) => i) : [];
        const anyOf = (columns ?? [column]).map((c) => ({
          column: c,
          sql: like(c),
          ...(shared && {
            unshared: {
              sql: `${columnSql(shared.column)} IN (${fewer.join(', ')}) AND ${like(c)}`,
              index: shared.indexes[c],
            },
          }),
        }));
        conditions.push({
          sql: `(${anyOf.map(({ sql }) => sql).join(' OR ')})`,
          anyOf,
          params: { [name]: `${escapeLike(String(value))}%` },
          binds,
        });
        break;
      }
    }
  }
  for (const [parameter, upwards] of [
    ['after_id', true],
    ['before_id', false],
  ] as const) {
    const id = query[parameter];
    if (id === undefined) continue;
    conditions.push({
      sql: `t.id ${upwards ? '>' : '<'} :${parameter}`,
      params: { [parameter]: id },
      idRange: true,
      keyset: { bound: id, upwards },
      between: upwards ? { from: id + 1 } : { to: id - 1 },
      binds: { column: 'id', range: true },
    });
    bound.ranges.add('id');
  }
  return { conditions, sortColumn, direction, bound };
}

/**
 * The rows after `position` in the listing's order: a keyset on (sort column, id). A position comes
 * after a match, past where a walk bound brings the walk: each step would only read the rows
 * changed since again (an export's every chunk).
 */
export function afterPosition(
  criteria: ListingCriteria,
  position: { value: unknown; id: number },
): ListingCriteria {
  const conditions = [...criteria.conditions, pastPosition(criteria, position)];
  const { trial, sortColumn, direction } = criteria;
  // The trial walks on from the position (a match's, so within the walk's bounds): one id past
  // it, or its time (ties follow it).
  const start =
    sortColumn === 'id' ? position.id + (direction === 'ASC' ? 1 : -1) : instantOf(position.value);
  return {
    ...criteria,
    conditions,
    walkBound: undefined,
    trial: trial && start !== undefined ? { ...trial, start } : undefined,
  };
}

/** A sort value's instant in ms (a cursor's timestamp is DATETIME text); undefined for a name. */
function instantOf(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  return typeof value === 'string' ? instantOfSqlDatetime(value) : undefined;
}

/**
 * The trial's walk: the criteria walked on its index, up to the histogram's bucket edge past which
 * its stretch from `start` would hold more than `entries` rows. Those are a prefix of the walk, so
 * when they hold the page, it is the page (docs/architecture.md, The planner).
 */
export function trialWalk(criteria: ListingCriteria): ListingCriteria | undefined {
  const { trial, direction, sortColumn } = criteria;
  if (!trial) return undefined;
  const { histogram, entries, start } = trial;
  const ascending = direction === 'ASC';
  let edge: number | undefined;
  if (sortColumn === 'id') {
    if (start !== undefined) edge = ascending ? start + entries : start - entries + 1;
  } else if (histogram) {
    const { size, buckets } = histogram;
    let rows = 0;
    for (let i = 0; i < buckets.length; i++) {
      const [bucket, n] = buckets[ascending ? i : buckets.length - 1 - i];
      const [from, to] = [bucket * size, (bucket + 1) * size];
      if (start !== undefined && (ascending ? to <= start : from > start)) continue;
      if (edge !== undefined && rows + n > entries) break;
      rows += n;
      edge = ascending ? to : from;
    }
  }
  if (edge === undefined) return undefined;
  const value = sortColumn === 'id' ? edge : new Date(edge);
  return {
    ...criteria,
    index: trial.index,
    sorted: false,
    trial: undefined,
    conditions: [
      ...criteria.conditions,
      {
        sql: `${columnSql(sortColumn)} ${ascending ? '<' : '>='} :trial_edge`,
        params: { trial_edge: value },
      },
    ],
  };
}

/** The rows up to `position`, itself included, in the listing's order: `afterPosition`'s others. */
export const upToPosition = (
  criteria: ListingCriteria,
  position: { value: unknown; id: number },
): ListingCriteria => ({
  ...criteria,
  conditions: [...criteria.conditions, upToCondition(criteria, position)],
});

/** `upToPosition`'s condition alone, its parameters named `<name>_value`, `<name>_id`. */
export function upToCondition(
  criteria: ListingCriteria,
  position: { value: unknown; id: number },
  /** Several positions in one statement need their own names. */
  name = 'cursor',
): Condition {
  const { sql, sqliteSql, params } = pastPosition(criteria, position, name);
  return { sql: `NOT (${sql})`, ...(sqliteSql && { sqliteSql: `NOT (${sqliteSql})` }), params };
}

function pastPosition(
  { sortColumn, direction }: ListingCriteria,
  position: { value: unknown; id: number },
  name = 'cursor',
): Condition {
  const [past, orEqual] = direction === 'ASC' ? ['>', '>='] : ['<', '<='];
  const column = columnSql(sortColumn);
  const [value, id] = [`${name}_value`, `${name}_id`];
  return sortColumn === 'id'
    ? { sql: `t.id ${past} :${id}`, params: { [id]: position.id }, idRange: true }
    : {
        // A plain range narrowed to two ranges of the (column, id) index: a step seeks past a run
        // of equal values, which `column >= v AND (column > v OR id > i)` scanned on MariaDB.
        sql:
          `${column} ${orEqual} :${value} AND (${column} ${past} :${value} OR ` +
          `(${column} = :${value} AND t.id ${past} :${id}))`,
        // SQLite seeks a row value; MariaDB does not (it scanned the whole index).
        sqliteSql: `(${column}, t.id) ${past} (:${value}, :${id})`,
        params: { [value]: position.value, [id]: position.id },
      };
}

/** A prefix's matches on the sort column (`own`), and the other columns' (`others`). */
export interface Stretch {
  own: ListingCriteria;
  others: ListingCriteria;
}

/**
 * A prefix on several columns (`q`) sorted by one of them, planned as a union of their indexes: its
 * matches on the sort column, one stretch of that column's index, read along it (`own`), and the
 * other columns' matches that the sort column's prefix does not match, counted on theirs (`others`).
 */
export function prefixStretch(criteria: ListingCriteria): Stretch | undefined {
  const indexes = criteria.index?.split(',') ?? [];
  const split = criteria.conditions.find((c) => c.anyOf && c.anyOf.length === indexes.length);
  const alternatives = split?.anyOf ?? [];
  const own = alternatives.findIndex(({ column }) => column === criteria.sortColumn);
  if (!split || own < 0 || alternatives.length !== 2) return undefined;
  const other = 1 - own;
  const replaced = (sql: string) =>
    criteria.conditions.map((c) => (c === split ? { sql, params: split.params } : c));
  return {
    own: {
      ...criteria,
      conditions: replaced(alternatives[own].sql),
      index: indexes[own],
      sorted: false,
    },
    others: {
      ...criteria,
      conditions: replaced(`(${alternatives[other].sql}) AND NOT (${alternatives[own].sql})`),
      countIndex: indexes[other],
    },
  };
}

/** The criteria's conditions with the implied ones: what a statement's WHERE holds. */
export const allConditions = (criteria: ListingCriteria): Condition[] => [
  ...criteria.conditions,
  ...(criteria.implied ?? []),
];

/** A filter value as keys and bindings write it: an instant in ISO 8601, anything else as JSON. */
const valueText = (value: unknown): string =>
  value instanceof Date ? value.toISOString() : JSON.stringify(value);

/** A stable text for the criteria, used as the key of cached totals. */
export function criteriaKey(resource: string, criteria: ListingCriteria): string {
  const parts = criteria.conditions.map((condition) => {
    const params = Object.entries(condition.params)
      .map(([k, v]) => `${k}=${valueText(v)}`)
      .join(',');
    return `${condition.sql}[${params}]`;
  });
  return `${resource}|${parts.join('&')}`;
}

/**
 * What a walk's cursors are sealed with: its filters' values as the request gives them, its sort
 * and its scope. Not their SQL, so that a release that changes how a filter is read (an exact
 * comparison, a quoted column) does not refuse the walks under way.
 */
export function walkBinding(
  definition: ListingDefinition,
  query: ListingQuery,
  principal: Principal,
): string {
  const values = query as unknown as Record<string, unknown>;
  const given = [...Object.keys(definition.filters), 'after_id', 'before_id'].flatMap((name) => {
    const value = values[name];
    if (value === undefined) return [];
    return [`${name}=${valueText(value)}`];
  });
  return `${definition.resource}|${given.join('&')}|${query.sort}|${principal.organizationId ?? '*'}`;
}

/** `t.id <= maxId` under the parameter `name`: the rows counted, or seen, up to a highest id. */
export const idsUpTo = (name: string, maxId: number): Condition => ({
  sql: `t.id <= :${name}`,
  params: { [name]: maxId },
  idRange: true,
});

/** The criteria narrowed to ids above `maxId`: the rows appended since a count. */
export const idsAbove = (criteria: ListingCriteria, maxId: number): ListingCriteria => ({
  ...criteria,
  // A short range at the end of the ids, whatever else the filters allow, counted or bucketed.
  countIndex: PRIMARY_KEY,
  bucketIndex: PRIMARY_KEY,
  conditions: [
    ...criteria.conditions,
    { sql: 't.id > :counted_max_id', params: { counted_max_id: maxId }, idRange: true },
  ],
});
