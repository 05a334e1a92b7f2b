/**
 * What a listing module declares about itself; the shared pieces (query DTO, criteria, paging,
 * envelope, count cache) do the rest.
 */
export type FilterOperator =
  /** `column = value` (case-insensitive where the column's collation is). */
  | 'equals'
  /** `column >= value`: the inclusive lower bound of a range. */
  | 'from'
  /** `column < value`: the exclusive upper bound of a range. */
  | 'to'
  /** Any of `columns` starts with the value. */
  | 'prefix';

export interface FilterDeclaration {
  operator: FilterOperator;
  /** The column the filter applies to (for `prefix`, the first of `columns`). */
  column: string;
  /** `prefix` only: any of these columns starts with the value. */
  columns?: string[];
  /** Every value the parameter accepts, when they are few (an enumeration, a boolean). */
  values?: readonly unknown[];
}

export interface ListingDefinition {
  /** Names the collection in cache keys, logs and metrics, e.g. `users`. */
  resource: string;
  /** The table whose rows are listed; its primary key is `id`. */
  table: string;
  /**
   * The column that ties a row to an organization. Tokens limited to one organization only ever
   * see rows whose column equals it; rows where it is NULL are visible to platform-wide tokens only.
   */
  organizationColumn: string;
  /** Columns the `sort` parameter accepts (each also as `-column`). `id` is always allowed. */
  sortableColumns: readonly string[];
  /**
   * Query parameter → how it filters. Parameters not listed here are not filters. Declared on the
   * query DTO with `@Filter` and read from it by `defineListing`.
   */
  filters: Record<string, FilterDeclaration>;
  /**
   * The indexes the listing reads through, besides the primary key (`id` order): the planner
   * (`listing-planner.ts`) walks one in the sort's order or reads one whole and sorts.
   */
  indexes: readonly IndexPath[];
  rollup?: RollupDeclaration;
}

/**
 * Few-valued columns whose rows are counted per hour of `time` for each combination of their
 * values (`listing-rollup.ts`): totals of any combination of their filters, with or without a
 * window on `time`, without counting the table.
 */
export interface RollupDeclaration {
  columns: readonly string[];
  time: string;
}

export type SortDirection = 'ASC' | 'DESC';

export function sortKeys(definition: Pick<ListingDefinition, 'sortableColumns'>): string[] {
  const columns = ['id', ...definition.sortableColumns.filter((column) => column !== 'id')];
  return columns.flatMap((column) => [column, `-${column}`]);
}

/**
 * An index a listing reads through: its equality columns, then the sort column, then `id`. Walked
 * in order it serves the sort (`sort`); read for its equality columns it serves any sort, sorted.
 */
export interface IndexPath {
  /** The index's name in the migrations; undefined for the primary key (sort `id`, no equals). */
  index?: string;
  equals: readonly string[];
  /** The order the index keeps after its equality columns (`id` alone: `equals…, id`). */
  sort: string;
  /** Few rows share a value of the equality columns (one user's attempts, one organization's users). */
  bounded?: true;
  /** Columns the index carries after its order: a filter on them is checked without reading the row. */
  covers?: readonly string[];
  /** A unique index on `equals`: at most one row. */
  unique?: true;
  /** The sort column is unique on its own: the walk orders by it alone (MariaDB sorts `, id`). */
  uniqueSort?: true;
}
