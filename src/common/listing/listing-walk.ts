import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import { ProblemException } from '../problem-details/problem.exception';
import type { Principal } from '../auth/principal';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { CountCache } from './count-cache';
import type { WalkPosition } from './listing-cursor';
import { columnSql, type ListingDefinition } from './listing-definition';
import {
  allConditions,
  afterPosition,
  buildCriteria,
  Condition,
  criteriaKey,
  ListingCriteria,
  Trial,
  walkBinding,
} from './listing-criteria';
import { Histogram, rowEstimates } from './listing-estimates';
import { choosePlan, PRIMARY_KEY } from './listing-planner';
import type { ListingQuery } from './listing-query.dto';
import { ListingRollups } from './listing-rollup';
import {
  settledPart,
  type Bucket,
  type ListingRepository,
  type PageOptions,
} from './listing.repository';

/** What one request reads: its criteria with their plan, their cache key and cursors' binding. */
export interface Walk<TItem extends { id: number }> {
  repository: ListingRepository<TItem>;
  criteria: ListingCriteria;
  /** The cache key of the walk's total. */
  key: string;
  /** What the walk's cursors are sealed with: filters' values, sort and scope (`walkBinding`). */
  binding: string;
  /** What cursors of an earlier release were sealed with: still accepted, never made. */
  earlierBinding: () => string;
  limit: number;
  afterId?: number;
  /**
   * The column whose time holds the newest rows back, on an ascending walk in id order (their
   * `created_at`) or in the order rows change (`changedAt`): tail polling and the holdback apply.
   */
  tail?: string;
  /** Its time window, when its totals can be cut from a shared histogram (worked out once). */
  window: () => TimeWindow | undefined;
}

/** A walk's time window on one timestamp column, and the same filters without it. */
export interface TimeWindow {
  column: string;
  from?: Date;
  to?: Date;
  /** The walk's filters and scope without the window, in the column's order. */
  base: ListingCriteria;
  baseKey: string;
}

/** Ids per keyset bucket: the most a keyset step counts by itself. */
export const KEYSET_BUCKET = 4096;

/** A timestamp sort's bucket: an hour. */
export const TIME_BUCKET_SECONDS = 3600;

/** The cache key of a criteria's histogram by `column` (ids: the keyset walks' one). */
export const bucketsKey = (key: string, column: string) =>
  column === 'id' ? `${key}|buckets` : `${key}|buckets:${column}`;

/** Turns a request into its walk: its criteria with the cheapest plan (`choosePlan`). */
@Injectable()
export class ListingWalks {
  /** The requests' statement options. */
  readonly options: PageOptions;
  /** A total's recount in the background: no request waits for it, so it may take longer. */
  readonly recountOptions: PageOptions;
  readonly defaultLimit: number;
  private readonly tailHoldbackMs: number;
  private readonly idsCommitInOrder: boolean;
  private readonly changeMarginMs: number;
  /** Sums of each histogram's buckets, taken once: they are replaced when counted again, never changed. */
  private readonly sumsByBuckets = new WeakMap<readonly Bucket[], BucketSums>();
  private readonly sumsOf = (buckets: readonly Bucket[]): BucketSums => {
    let sums = this.sumsByBuckets.get(buckets);
    if (!sums) this.sumsByBuckets.set(buckets, (sums = bucketSums(buckets)));
    return sums;
  };

  constructor(
    private readonly counts: CountCache,
    private readonly rollups: ListingRollups,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.defaultLimit = config.pagination.defaultLimit;
    this.tailHoldbackMs = config.tailHoldbackMs;
    // SQLite has one writer at a time: its ids become visible in their order, none commits late.
    this.idsCommitInOrder = config.database.kind === 'sqlite';
    // A row changed while a histogram was counted, or committed late, or by a clock a little behind.
    this.changeMarginMs = config.countCacheRecountTimeoutMs + config.tailHoldbackMs;
    this.options = {
      statementTimeoutMs: config.database.statementTimeoutMs,
      preparedStatements: config.database.preparedStatements > 0,
    };
    this.recountOptions = {
      ...this.options,
      statementTimeoutMs: config.countCacheRecountTimeoutMs,
    };
  }

  of<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
    /** How far into the walk its page ends: what the plan is priced for. */
    depth: number,
  ): Walk<TItem> {
    const criteria = this.planned(
      repository,
      buildCriteria(repository.definition, query, principal),
      depth,
    );
    const key = criteriaKey(repository.definition.resource, criteria);
    return {
      repository,
      criteria,
      key,
      binding: walkBinding(repository.definition, query, principal),
      // Until cursors made before walkBinding (87bca2d) have run out: the walks under way then,
      // sealed with their conditions' SQL as it was (no exact filter yet).
      earlierBinding: () =>
        `${criteriaKey(repository.definition.resource, buildCriteria(withoutExact(repository.definition), query, principal))}|${query.sort}|${principal.organizationId ?? '*'}`,
      limit: query.limit ?? this.defaultLimit,
      afterId: query.after_id,
      tail: tailColumn(repository.definition, criteria),
      window: once(() =>
        timeWindowOf(repository, query, principal, (c) => this.planned(repository, c, depth)),
      ),
    };
  }

  /** The criteria with their plan, priced from cached totals, the rollup and the histograms. */
  planned<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    criteria: ListingCriteria,
    depth: number,
  ): ListingCriteria {
    const { definition } = repository;
    // The whole table's histograms: their bounds and shares hold under any scope and filter.
    const tableKey = criteriaKey(definition.resource, { ...criteria, conditions: [] });
    const histogramOf = (column: string) => {
      const peeked = this.counts.peek(bucketsKey(tableKey, column));
      const counted = peeked ? settledPart(peeked) : this.rollups.hourly(repository, column);
      if (!counted?.buckets) return undefined;
      const size = column === 'id' ? KEYSET_BUCKET : TIME_BUCKET_SECONDS * 1000;
      // When it was counted in full: a count cache's histogram only (the rollup's is never a
      // changed column's).
      return { size, buckets: counted.buckets, maxId: counted.maxId, countedAt: peeked?.countedAt };
    };
    const { implied, bracketed } = impliedIdBounds(definition, criteria, histogramOf, this.sumsOf);
    const walkBound = walkBoundOf(definition, criteria, histogramOf, this.changeMarginMs);
    const windows = new Set(
      criteria.conditions
        .filter(({ binds, between }) => binds?.range && between && binds.column !== 'id')
        .map(({ binds }) => binds!.column),
    );
    // The implied bounds are a range of ids: the primary key's walk is priced on their stretch.
    const ranges = implied.length ? [...criteria.bound.ranges, 'id'] : criteria.bound.ranges;
    const bounded: ListingCriteria = {
      ...criteria,
      implied: implied.length ? implied : criteria.implied,
      bound: {
        ...criteria.bound,
        ranges: new Set(ranges),
        windows,
        bracketed,
        reached: walkBound && new Set([walkBound.window]),
        ranged: criteria.sortColumn === definition.changedAt ? definition.immutableTimestamps : [],
        timeOrders: repository.timeOrders,
      },
    };
    const estimates = rowEstimates(definition, bounded, {
      total: (conditions) =>
        this.counts.peek(criteriaKey(definition.resource, { ...criteria, conditions }))?.total ??
        this.rollups.estimate(repository, conditions),
      histogram: histogramOf,
    });
    const plan = choosePlan(
      definition.indexes,
      bounded.bound,
      bounded.sortColumn,
      depth,
      estimates,
    );
    // A filtered walk along the primary key names it, or the optimizer may sort a filter's index.
    const filteredWalk = plan.kind === 'walk' && allConditions(bounded).some((c) => !c.idRange);
    // The trial's stretch is measured in ids, or by the table's histogram of the sort column.
    const byId = bounded.sortColumn === 'id';
    const ids = byId ? idSpan(definition, bounded, histogramOf, this.sumsOf) : undefined;
    const histogram = byId ? undefined : histogramOf(bounded.sortColumn);
    const trial: Trial | undefined =
      plan.trial && (byId || histogram)
        ? {
            index: plan.trial.index ?? PRIMARY_KEY,
            entries: Math.ceil(plan.trial.entries * (ids?.perRow ?? 1)),
            start: walkStart(bounded) ?? ids?.start,
            histogram,
          }
        : undefined;
    return {
      ...bounded,
      walkBound: plan.kind === 'walk' ? walkBound?.bound : undefined,
      index: plan.index ?? (filteredWalk ? PRIMARY_KEY : undefined),
      countIndex: plan.countIndex,
      bucketIndex: plan.bucketIndex,
      sorted: plan.kind === 'sort',
      uniqueSort: plan.uniqueSort,
      trial,
    };
  }

  /**
   * The walk's `items` up to the first whose tail column (created, or changed) is less than
   * TAIL_HOLDBACK_MS before `completeAsOf`, or in id order whose id no id seen that long before
   * reached: a row still being committed could be overtaken by a newer one, or a back-dated one.
   */
  heldBack<TItem extends { id: number }>(
    { tail, criteria, repository }: Walk<TItem>,
    items: TItem[],
    completeAsOf: number,
  ): TItem[] {
    if (!tail || this.tailHoldbackMs <= 0 || items.length === 0) return items;
    const byId = criteria.sortColumn === 'id';
    const settled = byId ? repository.settledId(completeAsOf) : undefined;
    if (byId && settled === undefined && !this.idsCommitInOrder) {
      // No id seen that long before what the read holds (just after a start; on a replica, its
      // lag more): on MySQL/MariaDB none is known to have no lower id still being written. A 503,
      // not an empty page that could look like a walk's end (readiness says `tail` is settling).
      throw new ProblemException(
        HttpStatus.SERVICE_UNAVAILABLE,
        'Just started: rows in id order are served once the newest ids have settled (TAIL_HOLDBACK_MS); retry shortly.',
        { headers: { 'Retry-After': String(Math.ceil(this.tailHoldbackMs / 1000)) } },
      );
    }
    const cutoff = new Date(completeAsOf - this.tailHoldbackMs).toISOString();
    // In id order a row dated far ahead would hold back every later id for ever; in its own order
    // (a change feed) only rows dated later still, and served it would carry the cursor past now.
    const latestWriteTime =
      criteria.sortColumn === tail
        ? '\uffff'
        : new Date(completeAsOf + FUTURE_DATED_MS).toISOString();
    const first = items.findIndex((item) => {
      if (settled !== undefined && item.id > settled) return true;
      const written = (item as Record<string, unknown>)[tail];
      return typeof written === 'string' && written >= cutoff && written <= latestWriteTime;
    });
    return first < 0 ? items : items.slice(0, first);
  }

  /**
   * Whether a walk with a tail goes on past its last row (tail polling): not once its window on
   * the tail column closed TAIL_HOLDBACK_MS before the read, when no row can enter it any more.
   */
  goesOn<TItem extends { id: number }>(
    { tail, criteria }: Walk<TItem>,
    completeAsOf: number,
  ): boolean {
    if (!tail) return false;
    const ends = criteria.conditions
      .filter(({ binds, between }) => binds?.column === tail && between?.to !== undefined)
      .map(({ between }) => between!.to! + 1);
    return !(Math.min(...ends) <= completeAsOf - this.tailHoldbackMs);
  }
}

/** The criteria of the rows after `position` in `walk`'s order. */
export const after = <TItem extends { id: number }>(
  walk: Walk<TItem>,
  position: Pick<WalkPosition, 'value' | 'id'>,
) =>
  afterPosition(walk.criteria, {
    id: position.id,
    value: walk.repository.sortParameter(walk.criteria.sortColumn, position.value),
  });

/** Before any row a timestamp column can hold: where an empty change feed's next poll starts. */
const BEFORE_EVERY_TIME = '0001-01-01T00:00:00.000Z';

/** The position before the walk's first row (its keyset bound's, with `after_id`). */
export const walkStartPosition = <TItem extends { id: number }>({
  criteria,
  afterId,
}: Walk<TItem>): WalkPosition => ({
  value: criteria.sortColumn === 'id' ? null : BEFORE_EVERY_TIME,
  id: afterId ?? 0,
  offset: 0,
});

/** The column whose time holds a walk's newest rows back, on the walks that poll a tail. */
function tailColumn(
  { changedAt }: ListingDefinition,
  { sortColumn, direction }: ListingCriteria,
): string | undefined {
  if (direction !== 'ASC') return undefined;
  if (sortColumn === 'id') return 'created_at';
  return sortColumn === changedAt ? changedAt : undefined;
}

/** The position just after `item`, with `offset` rows before it. */
export const positionAfter = <TItem extends { id: number }>(
  walk: Walk<TItem>,
  item: TItem,
  offset: number,
): WalkPosition => ({
  value: walk.repository.sortValueOf(item, walk.criteria.sortColumn),
  id: item.id,
  offset,
});

/**
 * Id bounds implied by a request's ranges on timestamps a row never changes, from the table's
 * hourly histogram of that column (the lowest and highest ids of the hours the window reaches), so
 * that an id walk of a log starts and ends at its window (docs/architecture.md, Count cache).
 */
export function impliedIdBounds(
  { immutableTimestamps = [] }: ListingDefinition,
  criteria: ListingCriteria,
  histogramOf: (column: string) => (Histogram & { maxId: number }) | undefined,
  sumsOf: (buckets: readonly Bucket[]) => BucketSums,
): { implied: Condition[]; bracketed: Set<string> } {
  const implied: Condition[] = [];
  const bracketed = new Set<string>();
  for (const [i, { binds, between }] of criteria.conditions.entries()) {
    if (!binds?.range || !between || !immutableTimestamps.includes(binds.column)) continue;
    const histogram = histogramOf(binds.column);
    const sums = histogram && sumsOf(histogram.buckets);
    if (!histogram || !sums?.everyId) continue;
    const { size, buckets, maxId } = histogram;
    const name = `implied_${i}`;
    if (between.from !== undefined) {
      const lowest = lowestIdFrom(buckets, sums, Math.floor(between.from / size)) ?? maxId + 1;
      bracketed.add(binds.column);
      implied.push({
        sql: `t.id >= :${name}_from`,
        params: { [`${name}_from`]: lowest },
        idRange: true,
        binds: { column: 'id', range: true },
        between: { from: lowest },
      });
    }
    if (between.to !== undefined) {
      const highest = highestIdTo(buckets, sums, Math.floor(between.to / size)) ?? 0;
      if (highest >= maxId) continue; // every id the histogram has seen: no bound
      bracketed.add(binds.column);
      implied.push({
        sql: `(t.id <= :${name}_to OR t.id > :${name}_seen)`,
        params: { [`${name}_to`]: highest, [`${name}_seen`]: maxId },
        binds: { column: 'id', range: true },
        between: { to: highest },
      });
    }
  }
  return { implied, bracketed };
}

/** Where a walk in the criteria's order starts, by their bounds on the sort column (ids, or ms). */
function walkStart({ sortColumn, direction, conditions, implied = [] }: ListingCriteria) {
  const ascending = direction === 'ASC';
  const starts = [...conditions, ...implied]
    .filter(({ binds }) => binds?.range && binds.column === sortColumn)
    .map(({ between }) => (ascending ? between?.from : between?.to))
    .filter((at) => at !== undefined);
  if (!starts.length) return undefined;
  return ascending ? Math.max(...starts) : Math.min(...starts);
}

/** A histogram's rows, and its ids from each bucket on and up to each, summed once. */
export interface BucketSums {
  rows: number;
  /** Every bucket holds its lowest and highest ids. */
  everyId: boolean;
  /** The lowest id of the buckets from each one to the last (Infinity where none is known). */
  lowestFrom: Float64Array;
  /** The highest id of the buckets from the first to each one (-Infinity where none is known). */
  highestTo: Float64Array;
}

export function bucketSums(buckets: readonly Bucket[]): BucketSums {
  const n = buckets.length;
  const sums = {
    rows: 0,
    everyId: true,
    lowestFrom: new Float64Array(n),
    highestTo: new Float64Array(n),
  };
  for (let i = 0; i < n; i++) {
    const [, rows, first, last] = buckets[i];
    sums.rows += rows;
    sums.everyId &&= first !== undefined && last !== undefined;
    sums.highestTo[i] = Math.max(i > 0 ? sums.highestTo[i - 1] : -Infinity, last ?? -Infinity);
  }
  for (let i = n - 1; i >= 0; i--) {
    const below = i < n - 1 ? sums.lowestFrom[i + 1] : Infinity;
    sums.lowestFrom[i] = Math.min(below, buckets[i][2] ?? Infinity);
  }
  return sums;
}

/** The position of the first bucket (ascending by index) whose index is at least `index`. */
function firstAtLeast(buckets: readonly Bucket[], index: number): number {
  let [low, high] = [0, buckets.length];
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (buckets[middle][0] < index) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The lowest id of the buckets at `index` or after; undefined where there are none. */
export function lowestIdFrom(buckets: readonly Bucket[], sums: BucketSums, index: number) {
  const at = firstAtLeast(buckets, index);
  return at < buckets.length ? sums.lowestFrom[at] : undefined;
}

/** The highest id of the buckets at `index` or before; undefined where there are none. */
export function highestIdTo(buckets: readonly Bucket[], sums: BucketSums, index: number) {
  const at = firstAtLeast(buckets, index + 1) - 1;
  return at >= 0 ? sums.highestTo[at] : undefined;
}

/**
 * How far ahead of a read a `created_at` (or `changedAt`) is still taken for a write's time (a
 * writer's clock or a replica's lag bound off): a later date would otherwise hold a walk for ever.
 */
const FUTURE_DATED_MS = 10 * 60_000;

/** The most ids a row is taken to span: past it, gaps in the ids are taken to be few and wide. */
const MOST_IDS_PER_ROW = 4;

/**
 * The ids of the table by a histogram of a timestamp (its buckets' ids): where an id walk starts
 * without a bound of its own (the lowest id, or the highest), and how many ids a row spans.
 */
function idSpan(
  { changedAt, rollup }: ListingDefinition,
  { direction }: ListingCriteria,
  histogramOf: (column: string) => (Histogram & { maxId: number }) | undefined,
  sumsOf: (buckets: readonly Bucket[]) => BucketSums,
): { start: number; perRow: number } | undefined {
  const histogram = [changedAt, rollup?.time].map((c) => c && histogramOf(c)).find(Boolean);
  if (!histogram) return undefined;
  const { rows, lowestFrom } = sumsOf(histogram.buckets);
  const lowest = lowestFrom[0] ?? Infinity;
  if (!Number.isFinite(lowest) || rows === 0) return undefined;
  const perRow = Math.min(MOST_IDS_PER_ROW, Math.max(1, (histogram.maxId - lowest + 1) / rows));
  return { start: direction === 'DESC' ? histogram.maxId : lowest, perRow };
}

/** The share of its column's span a walk bound must keep a walk from passing to be worth its union. */
const LEAST_SKIPPED = 0.01;

/**
 * A window on the column every write sets (`changedAt`), for a walk in id order or in a timestamp
 * a row never changes, or a window on such a timestamp for a walk in `changedAt`'s order: its
 * matches may all lie at the walk's far end (users updated lately were created lately). The
 * table's histogram by `changedAt` gave, per hour, the range of ids and of each such timestamp its
 * rows had when counted; a row changed since has `changedAt` past the count, and a row appended
 * since an id above the histogram's. So every match lies in the sort column's range over the
 * hours the window reaches, or changed since, or appended: read as a union of the three
 * (docs/architecture.md, Count cache). Undefined where the range is every row's.
 */
function walkBoundOf(
  definition: ListingDefinition,
  criteria: ListingCriteria,
  histogramOf: (column: string) => (Histogram & { maxId: number; countedAt?: number }) | undefined,
  marginMs: number,
): { bound: Condition; window: string } | undefined {
  const { changedAt, immutableTimestamps = [] } = definition;
  const { sortColumn: sort } = criteria;
  if (!changedAt) return undefined;
  const windowOn = (column: string) =>
    criteria.conditions.filter(
      ({ binds, between }) => binds?.range && binds.column === column && between,
    );
  // By changedAt: the window is on an immutable timestamp, whose range each hour holds.
  const byChange = sort === changedAt;
  const column = byChange ? immutableTimestamps.find((c) => windowOn(c).length) : changedAt;
  const window = column ? windowOn(column) : [];
  const ranged = byChange ? column! : sort;
  if (!window.length || (ranged !== 'id' && !immutableTimestamps.includes(ranged)))
    return undefined;
  const changed = histogramOf(changedAt);
  if (!changed?.countedAt) return undefined;
  // The rows changed since are read on an index in the changed column's order (scoped: its own).
  const [changedPath] = definition.indexes
    .filter(
      ({ sort: order, index, equals }) =>
        order === changedAt &&
        index &&
        !index.includes(',') &&
        equals.every((column) => criteria.bound.equals.has(column)),
    )
    .sort(
      (a, b) =>
        b.equals.length - a.equals.length || (b.covers?.length ?? 0) - (a.covers?.length ?? 0),
    );
  if (!changedPath) return undefined;
  const from = Math.max(...window.map(({ between }) => between!.from ?? -Infinity));
  const to = Math.min(...window.map(({ between }) => between!.to ?? Infinity));
  // The sort column's range (ids, or seconds) in the hours the window reaches, and in all; none:
  // an empty range (every match changed or appended since). A window on changedAt reaches its own
  // hours; one on an immutable timestamp, the hours whose rows' range of it meets the window.
  // Where that range is in the histogram's buckets: the ids', or an immutable timestamp's.
  const at = ranged === 'id' ? 2 : 4 + 2 * immutableTimestamps.indexOf(ranged);
  const hourSeconds = changed.size / 1000;
  let [low, high, lowest, highest] = [Infinity, -Infinity, Infinity, -Infinity];
  for (const bucket of changed.buckets) {
    const [index] = bucket;
    const [min, max] = [bucket[at], bucket[at + 1]];
    if (min === undefined || max === undefined) return undefined;
    const [first, last] = byChange
      ? [index * hourSeconds, (index + 1) * hourSeconds - 1]
      : [min, max];
    [lowest, highest] = [Math.min(lowest, first), Math.max(highest, last)];
    const reaches = byChange
      ? (max + 1) * 1000 > from && min * 1000 <= to
      : index >= Math.floor(from / changed.size) && index <= Math.floor(to / changed.size);
    if (reaches) [low, high] = [Math.min(low, first), Math.max(high, last)];
  }
  const empty = low > high;
  // What the bound saves is the stretch a walk passes before the range, from either end (a page
  // near the end is walked from there): next to none where the sort column does not follow the
  // window (ids of imported users).
  const skipped = Math.max(low - lowest, highest - high);
  if (!empty && skipped < (highest - lowest) * LEAST_SKIPPED) return undefined;
  const range =
    sort === 'id'
      ? {
          sql: 't.id >= :reach_from AND t.id <= :reach_to',
          params: { reach_from: empty ? 1 : low, reach_to: empty ? 0 : high },
        }
      : {
          // Whole seconds: the upper bound is the second after the highest.
          sql: `${columnSql(sort)} >= :reach_from AND ${columnSql(sort)} < :reach_to`,
          params: {
            reach_from: new Date(empty ? 0 : low * 1000),
            reach_to: new Date(empty ? 0 : (high + 1) * 1000),
          },
        };
  const since = new Date(changed.countedAt - marginMs);
  const bound: Condition = {
    sql: `((${range.sql}) OR ${columnSql(changedAt)} >= :reach_since OR t.id > :reach_seen)`,
    params: { ...range.params, reach_since: since, reach_seen: changed.maxId },
    anyOf: [
      { column: sort, sql: range.sql },
      {
        column: changedAt,
        sql: `${columnSql(changedAt)} >= :reach_since`,
        index: changedPath.index,
      },
      { column: 'id', sql: 't.id > :reach_seen', index: PRIMARY_KEY },
    ],
  };
  return { bound, window: column! };
}

/** The query's window, when all its range filters are on one timestamp column (not a keyset). */
function timeWindowOf<TItem extends { id: number }>(
  repository: ListingRepository<TItem>,
  query: ListingQuery,
  principal: Principal,
  planned: (criteria: ListingCriteria) => ListingCriteria,
): TimeWindow | undefined {
  if (query.after_id !== undefined || query.before_id !== undefined) return undefined;
  const values = query as unknown as Record<string, unknown>;
  const rest: Record<string, unknown> = { ...values };
  let window: Pick<TimeWindow, 'column' | 'from' | 'to'> | undefined;
  for (const [parameter, { operator, column }] of Object.entries(repository.definition.filters)) {
    const value = values[parameter];
    if (value === undefined || (operator !== 'from' && operator !== 'to')) continue;
    if (!(value instanceof Date) || !repository.isTimestamp(column)) return undefined;
    if (window && window.column !== column) return undefined;
    window ??= { column };
    window[operator] = value;
    delete rest[parameter];
  }
  if (!window) return undefined;
  const base = planned(
    buildCriteria(
      repository.definition,
      { ...rest, sort: window.column } as ListingQuery,
      principal,
    ),
  );
  return { ...window, base, baseKey: criteriaKey(repository.definition.resource, base) };
}

function once<T>(compute: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) [value, done] = [compute(), true];
    return value;
  };
}

/** `definition` as releases before exact filters read it: every `equals` in the collation. */
const withoutExact = (definition: ListingDefinition): ListingDefinition => ({
  ...definition,
  filters: Object.fromEntries(
    Object.entries(definition.filters).map(([name, filter]) => [
      name,
      { ...filter, exact: undefined },
    ]),
  ),
});
