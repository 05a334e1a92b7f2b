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
  /**
   * `equals` only: byte for byte (an opaque identifier), not in the column's collation, which on
   * MySQL/MariaDB ignores case and trailing spaces (SQLite's default compares bytes already).
   */
  exact?: boolean;
  /**
   * `prefix` on two columns: a generated column holding how many leading characters they share
   * (as `LIKE` compares them, `most` at most), and per column an index led by it and that column. A row sharing
   * the value's length matches by one column exactly when it does by the other, so a union reads
   * of the other column's matches only the rows that share less (`unshared`).
   */
  shared?: { column: string; most: number; indexes: Record<string, string> };
  /** Every value the parameter accepts, when they are few (an enumeration, a boolean). */
  values?: readonly unknown[];
}

export interface ListingDefinition {
  /** Names the collection in cache keys, logs and metrics, e.g. `users`. */
  resource: string;
  /** The table whose rows are listed; its primary key is `id`. */
  table: string;
  /**
   * Ties a row to an organization: a scoped token sees only its own (NULL: platform-wide only).
   * `null`: rows every organization shares (roles, say), which every token with the scope sees.
   */
  organizationColumn: string | null;
  /** Columns the `sort` parameter accepts (each also as `-column`). `id` is always allowed. */
  sortableColumns: readonly string[];
  /** Query parameter → how it filters: `@Filter` on the query DTO, read by `defineListing`. */
  filters: Record<string, FilterDeclaration>;
  /** The indexes the planner may read through, besides the primary key. */
  indexes: readonly IndexPath[];
  rollup?: RollupDeclaration;
  /**
   * Timestamps a row keeps from its first write (a creation time, not `updated_at`): only a window
   * on one of these implies id bounds, which a row updated into the window would break.
   */
  immutableTimestamps?: readonly string[];
  /**
   * A timestamp every write of a row sets to its time (`updated_at`, indexed). Without one, rows
   * are taken never to change once written (a log): a cached total then stays exact but for
   * deleted rows.
   */
  changedAt?: string;
}

/** Few-valued columns counted per hour of `time` for each combination (`listing-rollup.ts`). */
export interface RollupDeclaration {
  columns: readonly string[];
  time: string;
}

export type SortDirection = 'ASC' | 'DESC';

export function sortKeys(definition: Pick<ListingDefinition, 'sortableColumns'>): string[] {
  const columns = ['id', ...definition.sortableColumns.filter((column) => column !== 'id')];
  return columns.flatMap((column) => [column, `-${column}`]);
}

/** An index a listing reads through: its equality columns, then the sort column, then `id`. */
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

/** `alias.column` in SQL, quoted: a column may be named with a reserved word (`group`, `key`). */
export const columnSql = (column: string, alias = 't'): string =>
  column === 'id' ? `${alias}.id` : `${alias}.\`${column}\``;
