import { ParameterError, ProblemException } from '../problem-details/problem.exception';
import type { FilterDeclaration, ListingDefinition } from './listing-definition';

/**
 * An index a listing reads through: its equality columns, then the sort column, then `id`. A
 * request is served by it when it binds every equality column and sorts by its sort column, so
 * the walk is a range of the index, already in the listing's order.
 */
export interface IndexPath {
  /** The index's name in the migrations; undefined for the primary key (sort `id`, no equals). */
  index?: string;
  equals: readonly string[];
  /** The order the index keeps after its equality columns (`id` alone: `equals…, id`). */
  sort: string;
  /**
   * The equality columns leave few rows (one user's attempts, one organization's users), so the
   * request's other filters may be checked row by row within them.
   */
  bounded?: true;
  /**
   * Columns the index carries after its order (e.g. an organization's log with its few-valued
   * columns): filters on them are checked inside the index, without reading the row, so they may
   * narrow a path whose rows are not few.
   */
  covers?: readonly string[];
  /** A unique index on `equals`: at most one row, so any sort and any other filter go with it. */
  unique?: true;
  /** The sort column is unique on its own: the walk orders by it alone (MariaDB sorts `, id`). */
  uniqueSort?: true;
}

/** What a request binds: columns compared for equality, and columns bounded by a range. */
export interface BoundColumns {
  equals: ReadonlySet<string>;
  ranges: ReadonlySet<string>;
}

/**
 * Adds what `filter` binds to `bound`: its column, compared for equality or bounded by a range (a
 * prefix of several columns bounds none that an index keeps in order).
 */
export function bind(
  bound: { equals: Set<string>; ranges: Set<string> },
  { operator, column, columns }: FilterDeclaration,
): void {
  if (operator === 'equals') bound.equals.add(column);
  else bound.ranges.add(columns && columns.length > 1 ? `(${columns.join(' or ')})` : column);
}

/** Names the primary key as a criteria's index (MySQL calls it so). */
export const PRIMARY_KEY = 'PRIMARY';

const PRIMARY_KEY_PATH: IndexPath = { equals: [], sort: 'id' };

/**
 * The index path that serves `bound` sorted by `sortColumn`, or undefined: the one binding the
 * most equality columns (the first declared on a tie). A range on the sort column is a range of
 * the walk; any other filter is checked on each row the path walks, which only a bounded path,
 * or one whose index covers that column, allows.
 */
export function findIndexPath(
  paths: readonly IndexPath[],
  bound: BoundColumns,
  sortColumn: string,
): IndexPath | undefined {
  let best: IndexPath | undefined;
  for (const path of [PRIMARY_KEY_PATH, ...paths]) {
    if (!path.unique && path.sort !== sortColumn) continue;
    if (!path.equals.every((column) => bound.equals.has(column))) continue;
    // Filters the path's order does not serve, checked on each of its rows. An equality on the
    // sort column is a (one-value) range of it.
    const checked = [
      ...[...bound.equals].filter(
        (column) => !path.equals.includes(column) && column !== path.sort,
      ),
      ...[...bound.ranges].filter((column) => path.unique || column !== path.sort),
    ];
    const inIndex = checked.every((column) => path.covers?.includes(column));
    if (checked.length && !path.bounded && !path.unique && !inIndex) continue;
    if (!best || rank(path) > rank(best)) best = path;
  }
  return best;
}

const rank = (path: IndexPath): number => (path.unique ? 1000 : 0) + path.equals.length;

/** The sorts (`column` and `-column`) that an index serves for `bound`, in the listing's order. */
export function supportedSorts(
  definition: Pick<ListingDefinition, 'sortableColumns' | 'indexes'>,
  bound: BoundColumns,
): string[] {
  const columns = ['id', ...definition.sortableColumns.filter((column) => column !== 'id')];
  return columns
    .filter((column) => findIndexPath(definition.indexes, bound, column))
    .flatMap((column) => [column, `-${column}`]);
}

/**
 * The index path of the request, or a 400 that names the sorts which go with its filters (or, when
 * none does, the filters that no index serves together).
 */
export function requireIndexPath(
  definition: Pick<ListingDefinition, 'sortableColumns' | 'indexes'>,
  bound: BoundColumns,
  sort: string,
  filterParameters: readonly string[],
): IndexPath {
  const sortColumn = sort.replace(/^-/, '');
  const path = findIndexPath(definition.indexes, bound, sortColumn);
  if (path) return path;
  const sorts = supportedSorts(definition, bound);
  const filters = filterParameters.length ? filterParameters.join(', ') : 'no filter';
  const error: ParameterError = sorts.length
    ? {
        parameter: 'sort',
        message: `sort=${sort} is not served by an index with ${filters}; with these filters, sort by ${sorts.join(', ')}`,
      }
    : {
        parameter: filterParameters.at(-1) ?? 'sort',
        message: `${filters} ${filterParameters.length > 1 ? 'together are' : 'is'} not served by one index in any order: narrow the rows first with a filter of few rows (see the README's filters and sorts)`,
      };
  throw ProblemException.badRequest([error]);
}

/**
 * The filters and the sorts they go with, as the `sort` parameter documents them: each filter
 * alone, then under an organization scope (where an organization's rows are few enough).
 */
export function describeSorts(
  definition: Pick<
    ListingDefinition,
    'sortableColumns' | 'indexes' | 'filters' | 'organizationColumn'
  >,
): string {
  const all = supportedSorts(definition, { equals: new Set(), ranges: new Set() }).filter(
    (sort) => !sort.startsWith('-'),
  );
  const sortsOf = (parameter: string | undefined, scoped: boolean): string => {
    const bound = {
      equals: new Set<string>(scoped ? [definition.organizationColumn] : []),
      ranges: new Set<string>(),
    };
    if (parameter) bind(bound, definition.filters[parameter]);
    const sorts = supportedSorts(definition, bound).filter((s) => !s.startsWith('-'));
    if (!sorts.length) return 'only with a filter of few rows';
    return sorts.length === all.length ? 'any' : sorts.map((sort) => `\`${sort}\``).join(', ');
  };
  const groups = new Map<string, string[]>();
  for (const parameter of Object.keys(definition.filters)) {
    const sorts = sortsOf(parameter, false);
    groups.set(sorts, [...(groups.get(sorts) ?? []), `\`${parameter}\``]);
  }
  const scopedAny = Object.keys(definition.filters).every((p) => sortsOf(p, true) === 'any');
  return (
    'Each filter goes with the sorts an index keeps it in (each also descending): ' +
    [...groups].map(([sorts, parameters]) => `${parameters.join(', ')}: ${sorts}`).join('; ') +
    '. With several filters, one of them must bring that order (or narrow the rows: see the README)' +
    (scopedAny ? '; under an organization-scoped token every filter goes with any sort' : '') +
    '. Other combinations answer 400 naming the sorts that work.'
  );
}
