import { Injectable, Optional } from '@nestjs/common';
import { ReadReplicas } from '../../database/read-replicas';
import type { Principal } from '../auth/principal';
import { CountCache, TotalCounter } from './count-cache';
import {
  Condition,
  criteriaKey,
  idsAbove,
  idsUpTo,
  ListingCriteria,
  upToCondition,
} from './listing-criteria';
import { columnSql } from './listing-definition';
import type { ListingQuery } from './listing-query.dto';
import { ListingRollups } from './listing-rollup';
import {
  after,
  bucketsKey,
  KEYSET_BUCKET,
  ListingWalks,
  TIME_BUCKET_SECONDS,
  TimeWindow,
  Walk,
} from './listing-walk';
import {
  settledPart,
  type Bucket,
  type ListingRepository,
  type ListingTotal,
  type Mark,
  type SortBucket,
} from './listing.repository';

/** `[rows, start, end)`: a bucket of the sort column, in its units (ids, or seconds). */
export type Span = [number, number, number];
/** Spans, and when the rows they sum were counted in full (a row updated since may have moved). */
export interface CountedSpans {
  spans: Span[];
  countedAt?: number;
}

/**
 * A walk's total and its rows per bucket of the sort column, cached per criteria and advanced by
 * the ids appended since: from the rollup where it answers, from the histogram of a keyset walk
 * or a time window's base, or counted.
 */
@Injectable()
export class ListingTotals {
  constructor(
    private readonly counts: CountCache,
    private readonly rollups: ListingRollups,
    private readonly walks: ListingWalks,
    @Optional() private readonly readReplicas?: ReadReplicas,
  ) {}

  /**
   * The walk's total, shared by all its cursor steps and numbered pages. `onMiss` counts when the
   * request is the one counting (by default, the count alone).
   */
  async of<TItem extends { id: number }>(
    walk: Walk<TItem>,
    onMiss: TotalCounter = this.advancing(walk, false),
  ): Promise<ListingTotal> {
    if (this.rollups.answers(walk.repository, walk.criteria)) {
      return this.counts.get(
        walk.key,
        (previous) => this.rolledTotal(walk, false, previous),
        (previous) => this.rolledTotal(walk, true, previous),
      );
    }
    const keyset = splitKeyset(walk.criteria);
    if (keyset) return this.counts.get(walk.key, () => this.countKeyset(walk, keyset));
    // A window's total is cut afresh from its base's histogram at each expiry, counted until then.
    const fromWindow =
      (fallback: TotalCounter): TotalCounter =>
      async (previous) => {
        const window = walk.window();
        const histogram = window && (await this.windowHistogram(walk, window));
        if (!histogram) return fallback(previous);
        // Its recent rows too: a far page counts them again, with any committed late.
        const { total, maxId, countedAt, recent } = histogram;
        const rows = recent && { settledId: recent.settledId, total: recent.total };
        return { total, maxId, countedAt, recent: rows };
      };
    return this.counts.get(walk.key, fromWindow(onMiss), fromWindow(this.advancing(walk, true)));
  }

  /** Replaces the walk's cached total with one counted afresh (here only, until its expiry). */
  replace<TItem extends { id: number }>(walk: Walk<TItem>, total: ListingTotal): void {
    this.counts.set(walk.key, total);
  }

  /**
   * The walk's rows per bucket of its sort column, ascending: the rollup's hours, or with
   * `walkRows` (the rows a walk to the page would pass) the criteria's histogram. Undefined for
   * keyset walks the rollup does not answer, sorts without buckets (names) and until the
   * histogram has been counted once, in the background.
   */
  async spans<TItem extends { id: number }>(
    walk: Walk<TItem>,
    walkRows?: number,
  ): Promise<CountedSpans | undefined> {
    const { repository, criteria } = walk;
    const { sortColumn: column } = criteria;
    if (!repository.timeOrders.has(column)) return undefined;
    const rolled = await this.rolledSpans(walk, column);
    if (rolled || walkRows === undefined || splitKeyset(criteria)) return rolled;
    const bucket = sortBucket(column);
    const window = walk.window();
    const histogram =
      window?.column === column
        ? await this.windowHistogram(walk, window)
        : await this.histogram(
            walk,
            bucket,
            window && (() => this.outside(walk, window, bucket, walkRows)),
          );
    if (!histogram) return undefined;
    // With the rows above its settled part (a short range of ids) in their buckets, read here: the
    // spans are not kept, so their recent rows need no count of their own.
    const settled = settledPart(histogram);
    const appended = idsAbove(criteria, settled.maxId);
    const { buckets = [] } = advanced(
      settled,
      await repository.count(appended, this.walks.options, bucket),
    );
    if (buckets.some(([index]) => index < 0)) return undefined;
    return {
      spans: buckets.map(([index, rows]) => [rows, index * bucket.size, (index + 1) * bucket.size]),
      countedAt: histogram.countedAt,
    };
  }

  /**
   * The walk's marks in an order without buckets (names), for its `total` rows: taken in the
   * background once (at once when `warming`) and again at each full recount; undefined until
   * then, and for a plan that sorts (it reads every match anyway). Rows appended since are
   * counted by the page.
   */
  marks<TItem extends { id: number }>(
    walk: Walk<TItem>,
    total: number,
    warming = false,
  ): Promise<ListingTotal> | undefined {
    const { repository, criteria } = walk;
    const { sortColumn, sorted } = criteria;
    if (sorted || splitKeyset(criteria) || repository.timeOrders.has(sortColumn)) return undefined;
    const key = marksKey(walk.key, sortColumn);
    const take: TotalCounter = () => this.takeMarks(walk, Math.max(1, Math.ceil(total / MARKS)));
    // A request keeps the marks there are; the refresh ahead takes them again at a full recount.
    const keep: TotalCounter = async (previous) => previous ?? take();
    const retake: TotalCounter = async (previous) =>
      previous && !this.counts.fullRecountDue(previous) ? previous : take();
    return warming || this.counts.warm(key, take) ? this.counts.get(key, keep, retake) : undefined;
  }

  /** A window's base's marks (the same filters without the window), before it has its own. */
  windowBaseMarks<TItem extends { id: number }>(walk: Walk<TItem>): ListingTotal | undefined {
    const window = walk.window();
    const marked = window && this.counts.peek(marksKey(window.baseKey, walk.criteria.sortColumn));
    return marked?.marks?.length ? marked : undefined;
  }

  /**
   * The base's marked rows up to a mark that the window leaves out, counted outside it: few where
   * the window holds most of the base (`created_to=<a month ago>`).
   */
  outsideUpTo<TItem extends { id: number }>(
    walk: Walk<TItem>,
    marked: ListingTotal,
  ): (at: { value: unknown; id: number }) => Promise<number> {
    const { repository, criteria } = walk;
    const window = walk.window()!;
    return async (at) => {
      const upTo = upToCondition(criteria, at);
      const seen = idsUpTo('outside_max_id', marked.maxId);
      // Along the window column's index; the mark's bound is checked there where that index
      // carries the sort column (a covering one), else row by row.
      const sides = this.outsideWindow(repository, window, [seen, upTo], window.column, [
        criteria.sortColumn,
      ]);
      const counted = await Promise.all(
        sides.map((side) => repository.count(side, this.walks.options)),
      );
      return counted.reduce((sum, { total }) => sum + total, 0);
    };
  }

  /**
   * Every `step`-th row of the walk's rows up to the table's highest id now, in ascending order:
   * a hop of `step` entries along the walk's index per mark, each a short statement.
   */
  private async takeMarks<TItem extends { id: number }>(
    walk: Walk<TItem>,
    step: number,
  ): Promise<ListingTotal> {
    const { repository, criteria } = walk;
    // Every hop on one server, up to the id settled as of what it holds: a page counts the rows
    // above, with any committed late (or not yet on a replica).
    const source = this.readReplicas?.source();
    const options = { ...this.walks.recountOptions, source };
    // As of the take's start: a row changed while it walks may have moved past a mark.
    const started = Date.now();
    const settled = await repository.settledOn(source);
    const highest = await repository.highestIdNow(options);
    const maxId = Math.min(highest, settled ?? highest);
    const ascending: ListingCriteria = {
      ...criteria,
      direction: 'ASC',
      conditions: [...criteria.conditions, idsUpTo('marks_max_id', maxId)],
    };
    const marks: Mark[] = [];
    let rest = ascending;
    for (;;) {
      const [row] = (await repository.findForward(rest, step - 1, 1, options)).items;
      if (!row) break;
      const value = repository.sortValueOf(row, criteria.sortColumn)!;
      marks.push([(marks.length + 1) * step - 1, value, row.id]);
      rest = after({ ...walk, criteria: ascending }, { value, id: row.id });
    }
    // Fewer than `step` rows are left: counted along the walk's index, from the last mark on.
    const { total } = await repository.count({ ...rest, countIndex: criteria.index }, options);
    return { total: marks.length * step + total, maxId, marks, countedAt: started };
  }

  /**
   * Counts afresh, or advances `previous` by the rows appended since (ids above its maximum). A
   * full count, which takes in deleted rows, runs when there is none yet and, once
   * COUNT_CACHE_FULL_RECOUNT_MS has passed, in the background. With `bucket`: a histogram.
   */
  advancing<TItem extends { id: number }>(
    walk: Walk<TItem>,
    background: boolean,
    bucket?: SortBucket,
  ): TotalCounter {
    const { criteria, repository } = walk;
    const options = background ? this.walks.recountOptions : this.walks.options;
    return async (previous) => {
      if (previous && !(background && this.counts.fullRecountDue(previous))) {
        // From its settled part: the rows above are counted again, with any committed late.
        const settled = settledPart(previous);
        return advanced(
          settled,
          await repository.countSettled(criteria, bucket, settled.maxId, options),
        );
      }
      const counted = await repository.countSettled(criteria, bucket, undefined, options);
      return { ...counted, countedAt: Date.now() };
    };
  }

  /**
   * Counts, unless cached, the platform-wide total of `filters` and its histograms by id and by
   * each timestamp sort, under the background recount's limit, less what the rollup gives, and
   * the marks of each other sort. `full`: the total and histograms expired are counted in full,
   * not advanced, however long ago they last were (the tables' periodic recount).
   */
  async warm<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    filters: Record<string, unknown>,
    full = false,
  ): Promise<void> {
    const counter = (walk: Walk<TItem>, bucket?: SortBucket): TotalCounter => {
      const advance = this.advancing(walk, true, bucket);
      return full ? () => advance() : advance;
    };
    let counted = false;
    for (const column of repository.timeOrders) {
      const query = { ...filters, sort: column } as ListingQuery;
      const walk = this.walks.of(repository, query, PLATFORM, this.walks.defaultLimit);
      // The rollup gives a filter's total, its rows per hour of its time column and the table's
      // (a window's implied id bounds), and its ids per hour where no two hours' ids interleave (a
      // log's); other times are still counted.
      const rolled = this.rollups.answers(repository, walk.criteria);
      const spansOf = rolled && this.rollups.spansOf(repository);
      if (spansOf && spansOf.includes(column)) continue;
      if (!counted && !rolled) await this.counts.get(walk.key, counter(walk));
      counted = true;
      await this.counts.get(bucketsKey(walk.key, column), counter(walk, sortBucket(column)));
    }
    // The marks of each order without buckets (a deep page by name).
    const unbucketed = repository.definition.sortableColumns.filter(
      (column) => !repository.timeOrders.has(column),
    );
    for (const column of unbucketed) {
      const query = { ...filters, sort: column } as ListingQuery;
      const first = this.walks.of(repository, query, PLATFORM, this.walks.defaultLimit);
      const { total } = await this.of(first);
      // Planned as a middle page is.
      const middle = this.walks.of(repository, query, PLATFORM, Math.ceil(total / 2));
      await this.marks(middle, total, true);
    }
  }

  /**
   * A total from the rollup: its whole hours, plus the counted partial hours at the window's edges
   * and the matching rows appended above its highest id, so that it is as exact as a count. A
   * total counted in full after the rollup was read (another instance's) is advanced instead.
   */
  private async rolledTotal<TItem extends { id: number }>(
    walk: Walk<TItem>,
    background: boolean,
    previous?: ListingTotal,
  ): Promise<ListingTotal> {
    const rolled = await this.rollups.total(walk.repository, walk.criteria);
    // The rollup was rebuilt meanwhile and leaves the criteria to count.
    if (!rolled) return this.advancing(walk, background)();
    // Only advanced, never counted in full: the rollup's own rebuild takes deleted rows in.
    if ((previous?.countedAt ?? -1) > rolled.builtAt) return this.advancing(walk, false)(previous);
    const [appended, ...edges] = await Promise.all([
      walk.repository.count(idsAbove(walk.criteria, rolled.maxId), this.walks.options),
      ...rolled.edges.map(([from, to]) => this.edgeTotal(walk, from, to, rolled.maxId)),
    ]);
    const total = edges.reduce((sum, rows) => sum + rows, rolled.total + appended.total);
    // As of the rollup's full read: a far page counts afresh where a row has changed since.
    const recent = { settledId: rolled.maxId, total: appended.total };
    return { total, maxId: appended.maxId, countedAt: rolled.builtAt, recent };
  }

  /**
   * The walk's rows per hour from the rollup, its partial hours counted as its total's are, and the
   * rows appended since the rollup counted per bucket (a short range of ids): a page positioned
   * newest first would otherwise miss them. Undefined where those fall inside a partial hour.
   */
  private async rolledSpans<TItem extends { id: number }>(
    walk: Walk<TItem>,
    column: string,
  ): Promise<CountedSpans | undefined> {
    const rolled = this.rollups.spans(walk.repository, walk.criteria, column);
    if (!rolled) return undefined;
    const bucket = sortBucket(column);
    const [appended, ...edges] = await Promise.all([
      walk.repository.count(idsAbove(walk.criteria, rolled.maxId), this.walks.options, bucket),
      ...rolled.edges.map(async ({ from, to, start, end }): Promise<Span> => [
        await this.edgeTotal(walk, from, to, rolled.maxId),
        start,
        end,
      ]),
    ]);
    const spans = [...rolled.spans, ...edges];
    for (const [index, rows, firstId, lastId] of appended.buckets ?? []) {
      const [start, end] =
        column === 'id'
          ? [firstId!, lastId! + 1]
          : [index * bucket.size, (index + 1) * bucket.size];
      const same = spans.find(([, from, to]) => from === start && to === end);
      if (same) same[0] += rows;
      else if (spans.some(([, from, to]) => from < end && start < to)) return undefined;
      else spans.push([rows, start, end]);
    }
    return { spans: spans.sort(([, a], [, b]) => a - b), countedAt: rolled.builtAt };
  }

  /**
   * The rows of a partial hour `[from, to)` at a window's edge, up to the rollup's highest id (the
   * ids above are counted with the page): an hour's rows along the time index, cached.
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
        sql: `${columnSql(time)} >= :edge_from AND ${columnSql(time)} < :edge_to`,
        params: { edge_from: new Date(from), edge_to: new Date(to) },
        binds: { column: time, range: true },
        between: { from, to: to - 1 },
      },
      idsUpTo('edge_max_id', maxId),
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
   * The criteria's histogram by `bucket.column`, cached and advanced like a total; undefined
   * until it has been counted once, in the background (a request does not wait for a full scan),
   * unless `cheapCount` offers a count at a bounded cost.
   */
  private histogram<TItem extends { id: number }>(
    walk: Walk<TItem>,
    bucket: SortBucket,
    cheapCount?: () => TotalCounter | undefined,
  ): Promise<ListingTotal> | undefined {
    const key = bucketsKey(walk.key, bucket.column);
    const recount = this.advancing(walk, true, bucket);
    const advance = this.advancing(walk, false, bucket);
    const cheap =
      cheapCount && !this.counts.peek(key) && !this.counts.counting(key) ? cheapCount() : undefined;
    if (cheap) {
      // Advanced at once: the base's histogram may be older than a total may be.
      const first = async () => advance(await cheap());
      return this.counts.get(key, (previous) => (previous ? advance(previous) : first()), recount);
    }
    if (!this.counts.warm(key, recount)) return undefined;
    return this.counts.get(key, advance, recount);
  }

  /**
   * A window's histogram by another column as its base's less the rows outside the window, when
   * those are fewer than `walkRows` (`created_to=<a month ago>`: most of the table, too many to
   * count while a request waits).
   */
  private outside<TItem extends { id: number }>(
    walk: Walk<TItem>,
    window: TimeWindow,
    bucket: SortBucket,
    walkRows: number,
  ): TotalCounter | undefined {
    const { repository } = walk;
    const peeked = this.counts.peek(bucketsKey(window.baseKey, bucket.column));
    // Without filters the base is the table, whose rows per hour of the rollup's time it holds.
    const whole = peeked
      ? settledPart(peeked)
      : window.base.conditions.length
        ? undefined
        : this.rollups.hourly(repository, bucket.column);
    const inside = this.counts.peek(walk.key)?.total;
    const wholeBuckets = whole?.buckets;
    if (!whole || !wholeBuckets || inside === undefined) return undefined;
    if (whole.total - inside > walkRows) return undefined;
    return async () => {
      const seen: Condition = {
        ...idsUpTo('outside_max_id', whole.maxId),
        binds: { column: 'id', range: true },
        between: { to: whole.maxId },
      };
      // Sorted by the bucket's column, so that the count reads an index that carries it.
      const outside = this.outsideWindow(repository, window, [seen], bucket.column, ['id']);
      const counted = await Promise.all(
        outside.map((criteria) => repository.count(criteria, this.walks.options, bucket)),
      );
      const rows = new Map(wholeBuckets.map(([index, n]) => [index, n]));
      for (const { buckets = [] } of counted) {
        for (const [index, n] of buckets) rows.set(index, (rows.get(index) ?? 0) - n);
      }
      // Rows deleted since the base was counted could leave a bucket short: none goes below 0.
      const buckets = [...rows]
        .filter(([, n]) => n > 0)
        .sort(([a], [b]) => a - b)
        .map(([index, n]): Bucket => [index, n]);
      const total = buckets.reduce((sum, [, n]) => sum + n, 0);
      return { total, maxId: whole.maxId, countedAt: whole.countedAt, buckets };
    };
  }

  /**
   * The window's base narrowed to the rows outside the window, one criteria per edge (before its
   * start, from its end on), with `extra` conditions and `ranges` bound, planned in `sortColumn`'s
   * order (the index a count reads).
   */
  private outsideWindow<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    { column, from, to, base }: TimeWindow,
    extra: Condition[],
    sortColumn: string,
    ranges: string[],
  ): ListingCriteria[] {
    const side = (sql: string, at: Date, between: Condition['between']) => {
      const range = { sql, params: { outside_at: at }, binds: { column, range: true }, between };
      const conditions = [...base.conditions, range, ...extra];
      const bound = { ...base.bound, ranges: new Set([...base.bound.ranges, column, ...ranges]) };
      return this.walks.planned(repository, { ...base, sortColumn, conditions, bound }, 1);
    };
    return [
      ...(from
        ? [side(`${columnSql(column)} < :outside_at`, from, { to: from.getTime() - 1 })]
        : []),
      ...(to ? [side(`${columnSql(column)} >= :outside_at`, to, { from: to.getTime() })] : []),
    ];
  }

  /**
   * A time window's histogram, cut from the hourly histogram of the same filters without it: the
   * whole hours inside are summed, the two partial hours at its edges counted. Undefined until the
   * base's histogram exists, for windows within one hour, and for times before 1970.
   */
  private async windowHistogram<TItem extends { id: number }>(
    walk: Walk<TItem>,
    window: TimeWindow,
  ): Promise<ListingTotal | undefined> {
    const { column, base, from, to } = window;
    const size = TIME_BUCKET_SECONDS;
    const firstWhole = from ? Math.ceil(from.getTime() / 1000 / size) : -Infinity;
    const endWhole = to ? Math.floor(to.getTime() / 1000 / size) : Infinity;
    if (firstWhole >= endWhole || [from, to].some((time) => time && time.getTime() < 0)) {
      return undefined;
    }
    const baseWalk = { ...walk, criteria: base, key: window.baseKey };
    const counted = await this.histogram(baseWalk, { column, size });
    const histogram = counted && settledPart(counted);
    if (!histogram || (histogram.buckets ?? []).some(([index]) => index < 0)) return undefined;
    // Cached like a total; cut afresh from the base's (advanced) histogram at expiry.
    return this.counts.get(bucketsKey(walk.key, column), async () => {
      const at = (bucket: number) => new Date(bucket * size * 1000);
      const edge = async (bucket: number, since: Date, until: Date): Promise<Bucket> => {
        const range: Condition[] = [
          { sql: `${columnSql(column)} >= :window_since`, params: { window_since: since } },
          { sql: `${columnSql(column)} < :window_until`, params: { window_until: until } },
          idsUpTo('window_max_id', histogram.maxId),
        ];
        const conditions = [...base.conditions, ...range];
        return [
          bucket,
          (await walk.repository.count({ ...base, conditions }, this.walks.options)).total,
        ];
      };
      // An edge on the hour has no partial hour to count. The edges are counted up to the base's
      // highest id, like its buckets; the rows appended since are added per bucket.
      const edges = await Promise.all([
        ...(from && from < at(firstWhole) ? [edge(firstWhole - 1, from, at(firstWhole))] : []),
        ...(to && at(endWhole) < to ? [edge(endWhole, at(endWhole), to)] : []),
      ]);
      const whole = (histogram.buckets ?? []).filter(
        ([index]) => index >= firstWhole && index < endWhole,
      );
      const buckets = [...whole, ...edges.filter(([, rows]) => rows > 0)].sort(([a], [b]) => a - b);
      const total = buckets.reduce((sum, [, rows]) => sum + rows, 0);
      // As of the base's last full count: rows updated since are not in it.
      const cut = { total, maxId: histogram.maxId, countedAt: histogram.countedAt, buckets };
      return this.advancing(walk, false, { column, size })(cut);
    });
  }

  /**
   * A keyset walk's total (`after_id=N`: ids above N; `before_id`: below) at a bounded cost: the
   * criteria's histogram by KEYSET_BUCKET ids gives the rows beyond N's bucket; only the ids
   * between N and its bucket's edge are counted per step.
   */
  private async countKeyset<TItem extends { id: number }>(
    walk: Walk<TItem>,
    { base, bound, upwards }: Keyset,
  ): Promise<ListingTotal> {
    const { repository } = walk;
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
    const baseWalk = {
      ...walk,
      criteria: base,
      key: criteriaKey(repository.definition.resource, base),
    };
    const histogram = this.histogram(baseWalk, sortBucket('id'));
    // Until the histogram has been counted once, in the background, the rows are counted as they are.
    if (!histogram) return repository.count(walk.criteria, this.walks.options);
    const counted = settledPart(await histogram);
    // Up to the histogram's highest id, like its buckets; the rows appended since are added.
    const upTo = idsUpTo('keyset_max_id', counted.maxId);
    const conditions = [...base.conditions, near, upTo];
    const within = await repository.count({ ...base, conditions }, this.walks.options);
    let beyond = 0;
    for (const [index, rows] of counted.buckets ?? []) {
      if (upwards ? index > bucket : index < bucket) beyond += rows;
    }
    return this.advancing(walk, false)({ total: beyond + within.total, maxId: counted.maxId });
  }
}

/** The cache key of a criteria's marks in `column`'s order. */
const marksKey = (key: string, column: string) => `${key}|marks:${column}`;

/** How many marks a criteria keeps: rows between two are walked. */
const MARKS = 1000;

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
    recent: appended.recent,
  };
  if (previous.buckets) {
    const merged = new Map(previous.buckets.map((bucket) => [bucket[0], bucket]));
    for (const bucket of appended.buckets ?? []) {
      const before = merged.get(bucket[0]);
      merged.set(bucket[0], before ? mergedBucket(before, bucket) : bucket);
    }
    total.buckets = [...merged.values()].sort(([a], [b]) => a - b);
  }
  return total;
}

/**
 * Two counts of one bucket as one: rows summed, then each range's lowest and highest kept; a
 * range one of them lacks (a bucket cut from a window) is not known of the whole.
 */
function mergedBucket([index, rows, ...ranges]: Bucket, [, more, ...others]: Bucket): Bucket {
  const kept: number[] = [];
  // Up to the first range one lacks: a bucket is a tuple, and JSON (Redis) has no holes.
  for (let i = 0; i < ranges.length && ranges[i] !== undefined && others[i] !== undefined; i++) {
    kept.push(i % 2 === 0 ? Math.min(ranges[i]!, others[i]!) : Math.max(ranges[i]!, others[i]!));
  }
  return [index, rows + more, ...kept];
}

/** The buckets of a sort column's histograms: KEYSET_BUCKET ids, or hours. */
const sortBucket = (column: string): SortBucket => ({
  column,
  size: column === 'id' ? KEYSET_BUCKET : TIME_BUCKET_SECONDS,
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
