import type { FilterDeclaration, IndexPath } from './listing-definition';

/** What a request binds: columns compared for equality, and columns bounded by a range. */
export interface BoundColumns {
  equals: ReadonlySet<string>;
  ranges: ReadonlySet<string>;
  /** Ranges of time (`created_from`, …): their matches may lie anywhere in another order. */
  windows?: ReadonlySet<string>;
  /** Windows that implied id bounds bring a walk in id order to (`impliedIdBounds`). */
  bracketed?: ReadonlySet<string>;
  /** Windows that a walk in the sort's order is brought to (`walkBoundOf`). */
  reached?: ReadonlySet<string>;
  /** Columns a histogram by the sort column keeps the range of, besides ids (`Bucket`). */
  ranged?: readonly string[];
  /** Orders that follow time, where a window's matches may cluster: `id` and the timestamps. */
  timeOrders?: ReadonlySet<string>;
}

/** Adds what `filter` binds to `bound` (a prefix of several columns binds none of them). */
export function bind(
  bound: { equals: Set<string>; ranges: Set<string> },
  { operator, column, columns }: FilterDeclaration,
): { column: string; range: boolean } {
  const range = operator !== 'equals';
  const name = range && columns && columns.length > 1 ? `(${columns.join(' or ')})` : column;
  (range ? bound.ranges : bound.equals).add(name);
  return { column: name, range };
}

/** The columns a bound names: `(name or email)` is a prefix of either. */
const columnsOf = (bound: string): string[] =>
  bound.startsWith('(') ? bound.slice(1, -1).split(' or ') : [bound];

/** Names the primary key as a criteria's index (MySQL calls it so). */
export const PRIMARY_KEY = 'PRIMARY';

const PRIMARY_KEY_PATH: IndexPath = { equals: [], sort: 'id' };

/** How a page is read: a `walk` of an index in the sort's order, or a `sort` of an index's rows. */
export interface ListingPlan {
  kind: 'walk' | 'sort';
  /** The index the page reads (undefined: the primary key, chosen by the database). */
  index?: string;
  /** The index that counts the rows: the cheapest to count, whatever the sort. */
  countIndex?: string;
  /** The index that counts the rows per bucket of the sort column (a deep page's histogram). */
  bucketIndex?: string;
  /** The sort column is unique: ties cannot happen. */
  uniqueSort?: boolean;
  /** Index entries the plan is expected to read for the page (for logs and tests). */
  cost: number;
  /**
   * A sort chosen over a walk whose matches may lie at its far end: that walk, tried first on its
   * first `entries` index entries (`trialWalk`); it answers when they hold the page.
   */
  trial?: { index?: string; entries: number };
}

/** An index priced for counting the request's rows. */
interface CountPath {
  path: IndexPath;
  cost: number;
  inOrder: boolean;
}

const cheaper = (a: CountPath, b: CountPath) =>
  a.cost < b.cost || (a.cost === b.cost && a.inOrder && !b.inOrder);

/** Estimated row counts, from the totals and histograms the service keeps. */
export interface RowEstimates {
  /** Rows matching the request's conditions on these columns alone (and its scope). */
  rows(equals: readonly string[], ranges: readonly string[]): number;
  /** Rows matching every condition of the request. */
  matches: number;
}

/** Reading and sorting a row costs about this many index entries walked in order. */
const SORT_ROW_COST = 2;
/** An entry whose filters are checked inside the index: the next entry, not a row lookup. */
const COVERED_CHECK_COST = 0.05;
/** Sorting an index's entries that carry the sort column and every filter: no row is read. */
const COVERED_SORT_COST = 0.25;
/** The most entries sorted from an index alone: more spill the sort's temporary table to disk. */
const COVERED_SORT_ROWS = 200_000;
/**
 * A sort for a page ending within this many rows keeps only those (a priority queue, which does
 * not spill, looking up no row but theirs): its cost is reading the matches, however many.
 */
export const TOP_SORT_ROWS = 1000;
/** The largest sort (in index entries) taken over a walk whose matches may lie at its far end. */
const SAFE_SORT_COST = 200_000;

/**
 * The cheapest plan for `bound` sorted by `sortColumn`, for a page that ends `depth` rows into
 * the walk: every index whose equality columns are bound, priced walked in order and sorted.
 */
export function choosePlan(
  paths: readonly IndexPath[],
  bound: BoundColumns,
  sortColumn: string,
  depth: number,
  estimates: RowEstimates,
): ListingPlan {
  const matches = Math.max(1, estimates.matches);
  const uniqueSort = paths.some((path) => path.sort === sortColumn && path.uniqueSort);
  let best: ListingPlan | undefined;
  let bestEquals = 0;
  /** Index entries the best plan may pass, at worst, before its page: set for exposed walks. */
  let bestStretch: number | undefined;
  /** The entries of the best plan's stretch, when it is an exposed walk. */
  let bestStretchRows = 0;
  /** The cheapest sort, with the index entries it reads. */
  let bestSort: { plan: ListingPlan; rows: number } | undefined;
  let countPath: CountPath | undefined;
  let bucketPath: CountPath | undefined;
  const boundColumns = [...bound.equals, ...bound.ranges];
  for (const path of [PRIMARY_KEY_PATH, ...paths]) {
    if (!path.equals.every((column) => bound.equals.has(column))) continue;
    // An equality or a range on the index's sort column is a stretch of its walk, not a check.
    const onSort = boundColumns.filter((column) => column === path.sort);
    const rows = path.unique
      ? 1
      : estimates.rows(
          [...path.equals, ...onSort.filter((c) => bound.equals.has(c))],
          onSort.filter((c) => bound.ranges.has(c)),
        );
    const checked = boundColumns.filter(
      (column) => !path.equals.includes(column) && column !== path.sort,
    );
    // Secondary indexes carry the primary key: a bound on `id` is checked inside any of them.
    const carries = (column: string) =>
      columnsOf(column).every((c) => c === 'id' || c === path.sort || path.covers?.includes(c));
    const covered = checked.every(carries);
    // Counting reads the index prefix, and a row for each entry unless the index carries the
    // checks; a histogram by the sort column also needs that column and those it keeps the range
    // of (on a tie: in its order).
    const entry = covered ? COVERED_CHECK_COST : 1;
    const count = { path, cost: rows * entry, inOrder: path.sort === sortColumn };
    if (!countPath || cheaper(count, countPath)) countPath = count;
    const bucketed = [sortColumn, ...(bound.ranged ?? [])].every(carries);
    const bucket = { ...count, cost: bucketed ? count.cost : rows };
    if (!bucketPath || cheaper(bucket, bucketPath)) bucketPath = bucket;
    const inOrder = path.unique || path.sort === sortColumn;
    if (inOrder) {
      // A checked prefix of the sort column clusters its matches in the walk's order: the walk may
      // pass most of the index before it reaches them.
      const clustered = checked.some((column) => columnsOf(column).includes(path.sort));
      const perMatch = checked.length === 0 ? 1 : clustered ? rows : rows / matches;
      // Without checks, or with checks the index carries, the walk reads no row but the page's.
      const cost = Math.min(rows, depth * perMatch) * entry;
      // Times correlate (users created lately were updated lately): a window checked on a walk in
      // another time's order may match only at its far end, unless implied id bounds bring an id
      // walk to it, or a walk bound (`walkBoundOf`) a walk in the sort's order.
      const exposed =
        !!bound.timeOrders?.has(path.sort) &&
        checked.some(
          (column) =>
            bound.windows?.has(column) &&
            !(path.sort === 'id' && bound.bracketed?.has(column)) &&
            !(path.sort === sortColumn && bound.reached?.has(column)),
        );
      // At worst such a walk passes every entry of its stretch that does not match, then the page.
      const worst = Math.min(rows, Math.max(0, rows - matches) + depth);
      const walk: ListingPlan = { kind: 'walk', index: path.index, uniqueSort, cost };
      consider(walk, path.equals.length, exposed ? worst : undefined, rows);
    }
    if (!path.unique && path.sort !== sortColumn) {
      const sort: ListingPlan = {
        kind: 'sort',
        index: path.index,
        uniqueSort,
        // Covering the sort column too, the matches are sorted from the index alone.
        cost:
          rows *
          (covered && carries(sortColumn) && (rows <= COVERED_SORT_ROWS || depth <= TOP_SORT_ROWS)
            ? COVERED_SORT_COST
            : SORT_ROW_COST),
      };
      if (!bestSort || sort.cost < bestSort.plan.cost) bestSort = { plan: sort, rows };
      consider(sort, path.equals.length);
    }
  }
  // The primary key's walk is always a candidate, so there is a plan. A walk that may pass most of
  // its stretch gives way to a sort that reads fewer entries than the walk may pass, and stays small.
  const safeSort =
    bestStretch !== undefined &&
    bestSort &&
    bestSort.rows <= bestStretch &&
    bestSort.plan.cost <= SAFE_SORT_COST;
  const plan = safeSort ? bestSort!.plan : best!;
  // Near the walk's start (page 1, a cursor step, an export chunk), the walk is tried on a bounded
  // stretch first: about √(depth × rows) entries, or twice what it is expected to read, where
  // matches spread along it as they mostly do.
  const entries = Math.ceil(Math.max(2 * best!.cost, Math.sqrt(depth * bestStretchRows)));
  const trial =
    safeSort && depth <= TOP_SORT_ROWS && entries < bestSort!.rows
      ? { index: best!.index, entries }
      : undefined;
  return {
    ...plan,
    countIndex: countPath?.path.index,
    bucketIndex: bucketPath?.path.index,
    ...(trial && { trial }),
  };

  function consider(candidate: ListingPlan, equals: number, stretch?: number, rows = 0): void {
    // On a tie, the index binding more equality columns (the scope's, say) reads fewer rows.
    if (
      !best ||
      candidate.cost < best.cost ||
      (candidate.cost === best.cost && equals > bestEquals)
    ) {
      best = candidate;
      bestStretch = stretch;
      bestStretchRows = rows;
      bestEquals = equals;
    }
  }
}
