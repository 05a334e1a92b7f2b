import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { CountCache, TotalCounter } from './count-cache';
import { Condition, criteriaKey, ListingCriteria } from './listing-criteria';
import { PRIMARY_KEY } from './listing-planner';
import type { ListingQuery } from './listing-query.dto';
import { ListingRollups } from './listing-rollup';
import {
  bucketsKey,
  KEYSET_BUCKET,
  ListingWalks,
  TIME_BUCKET_SECONDS,
  TimeWindow,
  Walk,
} from './listing-walk';
import type {
  ListingRepository,
  ListingTotal,
  PageOptions,
  SortBucket,
} from './listing.repository';

/** `[rows, start, end)`: a bucket of the sort column, in its units (ids, or seconds). */
export type Span = [number, number, number];

/**
 * A walk's total and its rows per bucket of the sort column, cached per criteria in the count
 * cache and advanced from the ids appended since: from the rollup where it answers, from the
 * histogram of a keyset walk or a time window's base, or counted.
 */
@Injectable()
export class ListingTotals {
  constructor(
    private readonly counts: CountCache,
    private readonly rollups: ListingRollups,
    private readonly walks: ListingWalks,
  ) {}

  /**
   * The walk's total, cached per criteria: shared by all its cursor steps and numbered pages.
   * `onMiss` counts when the request is the one counting (by default, count alone); a recount
   * ahead of expiry runs in the background. A keyset total is worked out from its histogram.
   */
  async of<TItem extends { id: number }>(
    walk: Walk<TItem>,
    onMiss: TotalCounter = this.advancing(walk, false),
  ): Promise<ListingTotal> {
    if (this.rollups.answers(walk.repository, walk.criteria)) {
      return this.counts.get(
        walk.key,
        () => this.rolledTotal(walk, false),
        () => this.rolledTotal(walk, true),
      );
    }
    const keyset = splitKeyset(walk.criteria);
    if (keyset) return this.counts.get(walk.key, () => this.countKeyset(walk, keyset));
    // A window's total is worked out afresh from its base's histogram at each expiry, and
    // counted as any other until that histogram exists.
    const fromWindow =
      (fallback: TotalCounter): TotalCounter =>
      async (previous) => {
        const window = walk.window();
        const histogram = window && (await this.windowHistogram(walk, window));
        if (!histogram) return fallback(previous);
        return { total: histogram.total, maxId: histogram.maxId, countedAt: Date.now() };
      };
    return this.counts.get(walk.key, fromWindow(onMiss), fromWindow(this.advancing(walk, true)));
  }

  /**
   * The walk's rows per bucket of its sort column, ascending: the rollup's hours (which cost
   * nothing to read), or with `counted` the criteria's histogram, cached and advanced like a
   * total. Undefined for keyset walks, sorts without buckets (names, e-mails) and until the
   * histogram has been counted once, in the background.
   */
  async spans<TItem extends { id: number }>(
    walk: Walk<TItem>,
    counted: boolean,
  ): Promise<Span[] | undefined> {
    const { repository, criteria } = walk;
    if (splitKeyset(criteria)) return undefined;
    const { sortColumn: column } = criteria;
    const bucket: SortBucket | undefined =
      column === 'id'
        ? { column, size: KEYSET_BUCKET }
        : repository.isTimestamp(column)
          ? { column, size: TIME_BUCKET_SECONDS }
          : undefined;
    if (!bucket) return undefined;
    const rolled = await this.rolledSpans(walk, column);
    if (rolled || !counted) return rolled;
    const window = walk.window();
    const histogram =
      window?.column === column
        ? await this.windowHistogram(walk, window)
        : await this.histogram(walk, criteria, bucket);
    const buckets = histogram?.buckets ?? [];
    if (!histogram || buckets.some(([index]) => index < 0)) return undefined;
    return buckets.map(([index, rows]) => [rows, index * bucket.size, (index + 1) * bucket.size]);
  }

  /**
   * Counts afresh, or advances the total it replaces by counting only the rows appended since
   * (ids above its maximum), a short range at the end of the id index. A full count, which takes
   * in deleted rows, runs when there is no total yet and, once COUNT_CACHE_FULL_RECOUNT_MS has
   * passed, in the background (`background`), under the recount's longer limit. `count` counts
   * the walk's total by default; a histogram counts rows per bucket.
   */
  advancing<TItem extends { id: number }>(
    walk: Walk<TItem>,
    background: boolean,
    criteria: ListingCriteria = walk.criteria,
    count: (criteria: ListingCriteria, options: PageOptions) => Promise<ListingTotal> = (
      what,
      options,
    ) => walk.repository.count(what, options),
  ): TotalCounter {
    const options = background ? this.walks.recountOptions : this.walks.options;
    return async (previous) => {
      if (previous && !(background && this.counts.fullRecountDue(previous))) {
        return advanced(previous, await count(idsAbove(criteria, previous.maxId), options));
      }
      return { ...(await count(criteria, options)), countedAt: Date.now() };
    };
  }

  /**
   * Counts, unless cached, the platform-wide total of `filters` and its histograms by id and by
   * each timestamp it can be sorted by, one after another, under the background recount's limit:
   * what the first visit of such a listing would otherwise wait for (less what the rollup gives).
   */
  async warm<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    filters: Record<string, unknown>,
  ): Promise<void> {
    let counted = false;
    for (const column of repository.timeOrders) {
      const query = { ...filters, sort: column } as ListingQuery;
      const walk = this.walks.of(repository, query, PLATFORM, this.walks.defaultLimit);
      // The rollup gives a filter's total and its rows per hour; ids are still counted (keyset
      // totals), and the whole table's hours for the id bounds of time windows.
      const rolled = this.rollups.answers(repository, walk.criteria);
      if (rolled && column !== 'id' && Object.keys(filters).length > 0) continue;
      if (!counted && !rolled) await this.counts.get(walk.key, this.advancing(walk, true));
      counted = true;
      const bucket = { column, size: column === 'id' ? KEYSET_BUCKET : TIME_BUCKET_SECONDS };
      const byBucket = (what: ListingCriteria, options: PageOptions) =>
        repository.countByBucket(what, bucket, options);
      await this.counts.get(
        bucketsKey(walk.key, column),
        this.advancing(walk, true, walk.criteria, byBucket),
      );
    }
  }

  /**
   * A total from the listing's rollup: its whole hours, the partial hours at the window's edges and
   * the matching rows appended above the rollup's highest id (a short range of the primary key),
   * so that it is as exact as a count.
   */
  private async rolledTotal<TItem extends { id: number }>(
    walk: Walk<TItem>,
    background: boolean,
  ): Promise<ListingTotal> {
    const rolled = (await this.rollups.total(walk.repository, walk.criteria, background))!;
    const [appended, ...edges] = await Promise.all([
      walk.repository.count(idsAbove(walk.criteria, rolled.maxId), this.walks.options),
      ...rolled.edges.map(([from, to]) => this.edgeTotal(walk, from, to, rolled.maxId)),
    ]);
    const total = edges.reduce((sum, rows) => sum + rows, rolled.total + appended.total);
    return { total, maxId: appended.maxId, countedAt: Date.now() };
  }

  /**
   * The walk's rows per hour from the rollup, a window's partial hours counted as its total's are
   * (cached): undefined where the rollup does not answer.
   */
  private async rolledSpans<TItem extends { id: number }>(
    walk: Walk<TItem>,
    column: string,
  ): Promise<Span[] | undefined> {
    const rolled = this.rollups.spans(walk.repository, walk.criteria, column);
    if (!rolled) return undefined;
    const edges = await Promise.all(
      rolled.edges.map(async ({ from, to, start, end }): Promise<Span> => [
        await this.edgeTotal(walk, from, to, rolled.maxId),
        start,
        end,
      ]),
    );
    return [...rolled.spans, ...edges].sort(([, a], [, b]) => a - b);
  }

  /**
   * The rows of a partial hour `[from, to)` at a window's edge, up to the rollup's highest id (the
   * rows above it are the appended ones, counted with the page): at most an hour's rows along
   * the time index, cached like a total.
   */
  private async edgeTotal<TItem extends { id: number }>(
    walk: Walk<TItem>,
    from: number,
    to: number,
    maxId: number,
  ): Promise<number> {
    const { repository, criteria } = walk;
    const time = repository.definition.rollup!.time;
    const conditions: Condition[] = [
      ...criteria.conditions.filter((c) => !(c.binds?.range && c.binds.column === time)),
      {
        sql: `t.${time} >= :edge_from AND t.${time} < :edge_to`,
        params: { edge_from: new Date(from), edge_to: new Date(to) },
        binds: { column: time, range: true },
        between: { from, to: to - 1 },
      },
      { sql: 't.id <= :edge_max_id', params: { edge_max_id: maxId }, idRange: true },
    ];
    const bound = {
      equals: criteria.bound.equals,
      ranges: new Set([...criteria.bound.ranges, time]),
    };
    const edge = this.walks.planned(repository, { ...criteria, conditions, bound, implied: [] }, 1);
    const key = criteriaKey(repository.definition.resource, edge);
    const counted = await this.counts.get(key, () => repository.count(edge, this.walks.options));
    return counted.total;
  }

  /**
   * The criteria's histogram of rows per bucket of `bucket.column`, cached and advanced like a
   * total; undefined until it has been counted once, in the background. Ids share the keyset
   * walks' histogram.
   */
  private async histogram<TItem extends { id: number }>(
    walk: Walk<TItem>,
    criteria: ListingCriteria,
    bucket: SortBucket,
  ): Promise<ListingTotal | undefined> {
    const key = bucketsKey(walk.key, bucket.column);
    const byBucket = (what: ListingCriteria, options: PageOptions) =>
      walk.repository.countByBucket(what, bucket, options);
    if (!this.counts.warm(key, this.advancing(walk, true, criteria, byBucket))) return undefined;
    return this.counts.get(
      key,
      this.advancing(walk, false, criteria, byBucket),
      this.advancing(walk, true, criteria, byBucket),
    );
  }

  /**
   * A time window's histogram (`created_from`/`created_to`), cut from the hourly histogram of the
   * same filters without the window, which every window shares: the whole hours inside the window
   * are summed, and the rows of the two partial hours at its edges are counted (an hour's rows at
   * most, along the time index). Undefined until the base's histogram exists, for windows within
   * one hour, and for times before 1970.
   */
  private async windowHistogram<TItem extends { id: number }>(
    walk: Walk<TItem>,
    window: TimeWindow,
  ): Promise<ListingTotal | undefined> {
    const { column, base, from, to } = window;
    const size = TIME_BUCKET_SECONDS;
    const baseWalk = { ...walk, criteria: base, key: window.baseKey };
    const firstWhole = from ? Math.ceil(from.getTime() / 1000 / size) : -Infinity;
    const endWhole = to ? Math.floor(to.getTime() / 1000 / size) : Infinity;
    if (firstWhole >= endWhole || [from, to].some((time) => time && time.getTime() < 0)) {
      return undefined;
    }
    const histogram = await this.histogram(baseWalk, base, { column, size });
    if (!histogram || (histogram.buckets ?? []).some(([index]) => index < 0)) return undefined;
    // Cached like a total; worked out afresh from the base's (advanced) histogram at expiry.
    return this.counts.get(bucketsKey(walk.key, column), () =>
      this.cutWindow(walk, window, histogram, firstWhole, endWhole),
    );
  }

  private async cutWindow<TItem extends { id: number }>(
    walk: Walk<TItem>,
    { column, base, from, to }: TimeWindow,
    histogram: ListingTotal,
    firstWhole: number,
    endWhole: number,
  ): Promise<ListingTotal> {
    const size = TIME_BUCKET_SECONDS;
    const edge = async (bucket: number, since: Date, until: Date): Promise<[number, number]> => {
      const range: Condition[] = [
        { sql: `t.${column} >= :window_since`, params: { window_since: since } },
        { sql: `t.${column} < :window_until`, params: { window_until: until } },
      ];
      const counted = await walk.repository.count(
        { ...base, conditions: [...base.conditions, ...range] },
        this.walks.options,
      );
      return [bucket, counted.total];
    };
    const at = (bucket: number) => new Date(bucket * size * 1000);
    // An edge on the hour has no partial hour to count.
    const edges = await Promise.all([
      ...(from && from < at(firstWhole) ? [edge(firstWhole - 1, from, at(firstWhole))] : []),
      ...(to && at(endWhole) < to ? [edge(endWhole, at(endWhole), to)] : []),
    ]);
    const whole = (histogram.buckets ?? []).filter(
      ([index]) => index >= firstWhole && index < endWhole,
    );
    const buckets = [...whole, ...edges.filter(([, rows]) => rows > 0)].sort(([a], [b]) => a - b);
    const total = buckets.reduce((sum, [, rows]) => sum + rows, 0);
    return { total, maxId: histogram.maxId, buckets };
  }

  /**
   * The total of a keyset walk (`after_id=N`: ids above N; `before_id`: below) at a bounded cost
   * per step: a histogram of the criteria's rows per id bucket (KEYSET_BUCKET ids), counted once
   * and then advanced like any total, shared by every step of every walk over the same criteria,
   * gives the rows beyond N's bucket; only the ids between N and its bucket's edge, at most
   * KEYSET_BUCKET of them on the primary key, are counted per step.
   */
  private async countKeyset<TItem extends { id: number }>(
    walk: Walk<TItem>,
    keyset: Keyset,
  ): Promise<ListingTotal> {
    const { repository } = walk;
    const { base, bound, upwards } = keyset;
    const bucket = Math.floor(bound / KEYSET_BUCKET);
    const near: Condition = upwards
      ? {
          sql: 't.id > :keyset_bound AND t.id < :keyset_edge',
          params: { keyset_bound: bound, keyset_edge: (bucket + 1) * KEYSET_BUCKET },
        }
      : {
          sql: 't.id >= :keyset_edge AND t.id < :keyset_bound',
          params: { keyset_bound: bound, keyset_edge: bucket * KEYSET_BUCKET },
        };
    const byBucket = (criteria: ListingCriteria, options: PageOptions) =>
      repository.countByBucket(criteria, { column: 'id', size: KEYSET_BUCKET }, options);
    const key = bucketsKey(criteriaKey(repository.definition.resource, base), 'id');
    // Until the histogram has been counted once, in the background (9 s for 50M rows, past the
    // statement limit), the rows beyond the bound are counted as they are.
    if (!this.counts.warm(key, this.advancing(walk, true, base, byBucket))) {
      return repository.count(walk.criteria, this.walks.options);
    }
    const [histogram, within] = await Promise.all([
      this.counts.get(
        key,
        this.advancing(walk, false, base, byBucket),
        this.advancing(walk, true, base, byBucket),
      ),
      repository.count({ ...base, conditions: [...base.conditions, near] }, this.walks.options),
    ]);
    let beyond = 0;
    for (const [index, rows] of histogram.buckets ?? []) {
      if (upwards ? index > bucket : index < bucket) beyond += rows;
    }
    return { total: beyond + within.total, maxId: histogram.maxId };
  }
}

/** Whom the warm-up counts for: every organization's rows, as a platform-wide token sees them. */
const PLATFORM: Principal = {
  tokenId: 0,
  tokenName: 'count-cache warm-up',
  scopes: new Set(),
  organizationId: null,
};

/** `previous` with the rows appended since it was counted (and its histogram's buckets). */
function advanced(previous: ListingTotal, appended: ListingTotal): ListingTotal {
  const total: ListingTotal = {
    total: previous.total + appended.total,
    maxId: Math.max(previous.maxId, appended.maxId),
    countedAt: previous.countedAt,
  };
  if (previous.buckets) {
    const merged = new Map(previous.buckets.map((bucket) => [bucket[0], bucket]));
    for (const [index, rows, firstId, lastId] of appended.buckets ?? []) {
      const [, before = 0, first = firstId, last = lastId] = merged.get(index) ?? [];
      merged.set(index, [index, before + rows, minOf(first, firstId), maxOf(last, lastId)]);
    }
    total.buckets = [...merged.values()].sort(([a], [b]) => a - b);
  }
  return total;
}

const minOf = (a?: number, b?: number) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);
const maxOf = (a?: number, b?: number) =>
  a === undefined ? b : b === undefined ? a : Math.max(a, b);

/** The criteria narrowed to ids above `maxId`: the rows appended since a count. */
const idsAbove = (criteria: ListingCriteria, maxId: number): ListingCriteria => ({
  ...criteria,
  // A short range at the end of the ids, whatever else the filters allow, counted or bucketed.
  countIndex: PRIMARY_KEY,
  bucketIndex: PRIMARY_KEY,
  conditions: [
    ...criteria.conditions,
    { sql: 't.id > :counted_max_id', params: { counted_max_id: maxId }, idRange: true },
  ],
});

interface Keyset {
  /** The criteria without the keyset bound. */
  base: ListingCriteria;
  bound: number;
  /** `after_id` (ids above the bound) rather than `before_id`. */
  upwards: boolean;
}

/** The keyset bound (`after_id` or `before_id`, not both) and the criteria without it. */
function splitKeyset(criteria: ListingCriteria): Keyset | undefined {
  const keysets = criteria.conditions.filter((condition) => condition.keyset);
  if (keysets.length !== 1) return undefined; // none, or both bounds: counted plainly
  const conditions = criteria.conditions.filter((condition) => !condition.keyset);
  return { base: { ...criteria, conditions }, ...keysets[0].keyset! };
}
