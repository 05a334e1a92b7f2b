import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ProblemException } from '../problem-details/problem.exception';
import { CountCache, TotalCounter } from './count-cache';
import { ListingCursors, WalkPosition } from './listing-cursor';
import { ListingExport } from './listing-export';
import type { ListingFormat } from './listing-format.decorator';
import {
  afterPosition,
  buildCriteria,
  Condition,
  criteriaKey,
  ListingCriteria,
} from './listing-criteria';
import type { ListingQuery } from './listing-query.dto';
import { choosePlan, PRIMARY_KEY } from './listing-planner';
import { Histogram, rowEstimates } from './listing-estimates';
import { ListingRollups } from './listing-rollup';
import type {
  ListingRepository,
  ListingTotal,
  PageOptions,
  SortBucket,
} from './listing.repository';
import { Page } from './page';

/** The paging rules every listing follows: scope, filters, totals and the requested page. */
@Injectable()
export class ListingPager {
  private readonly options: PageOptions;
  /** A total's recount in the background: no request waits for it, so it may take longer. */
  private readonly recountOptions: PageOptions;

  private readonly defaultLimit: number;
  private readonly tailHoldbackMs: number;
  private readonly fullRecountMs: number;
  private readonly deepPageRows: number;

  constructor(
    private readonly counts: CountCache,
    private readonly cursors: ListingCursors,
    private readonly rollups: ListingRollups,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.defaultLimit = config.pagination.defaultLimit;
    this.tailHoldbackMs = config.tailHoldbackMs;
    this.fullRecountMs = config.countCacheFullRecountMs;
    this.deepPageRows = config.deepPageRows;
    this.options = {
      statementTimeoutMs: config.database.statementTimeoutMs,
      preparedStatements: config.database.preparedStatements > 0,
    };
    this.recountOptions = {
      ...this.options,
      statementTimeoutMs: config.countCacheRecountTimeoutMs,
    };
  }

  /** The request's page, or with `ndjson` its export: what a listing's service answers. */
  list<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
    format: ListingFormat,
  ): Promise<Page<TItem> | ListingExport> {
    return format === 'ndjson'
      ? this.export(repository, query, principal)
      : this.paginate(repository, query, principal);
  }

  async paginate<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<Page<TItem>> {
    const limit = query.limit ?? this.defaultLimit;
    const depth = query.cursor === undefined ? (query.page ?? 1) * limit : limit;
    const walk = this.walkOf(repository, query, principal, depth);
    if (query.cursor === undefined) return this.numberedPage(walk, query.page ?? 1);
    if (query.page !== undefined) {
      throw ProblemException.badRequest([
        { parameter: 'page', message: 'cannot be combined with cursor, which stands for its page' },
      ]);
    }
    const position = this.cursors.decode(walk.binding, query.cursor);
    // One row more than the page says whether the walk goes on, whatever the (cached) total.
    const [counted, read] = await Promise.all([
      this.total(walk),
      repository.findFirst(after(walk, position), walk.limit + 1, this.options),
    ]);
    const more = read.length > walk.limit;
    const items = more ? read.slice(0, walk.limit) : read;
    return this.page(walk, items, position.offset, counted.total, more, position);
  }

  /**
   * Every matching row (up to `limit`, when given) as an NDJSON stream, read in keyset chunks
   * under the statement limit. The first chunk is read before the reply starts.
   */
  async export<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<ListingExport> {
    if (query.page !== undefined) {
      throw ProblemException.badRequest([
        {
          parameter: 'page',
          message: 'is not used by an export, which streams every matching row (limit caps them)',
        },
      ]);
    }
    const walk = this.walkOf(repository, query, principal, EXPORT_CHUNK_ROWS);
    let position =
      query.cursor === undefined ? undefined : this.cursors.decode(walk.binding, query.cursor);
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let ended = false;
    const read = async (): Promise<TItem[] | undefined> => {
      if (ended || remaining <= 0) return undefined;
      const rows = Math.min(EXPORT_CHUNK_ROWS, remaining);
      const from = position ? after(walk, position) : walk.criteria;
      const items = await repository.findFirst(from, rows, this.options);
      const shown = walk.tail ? this.heldBack(items) : items;
      ended = shown.length < rows;
      remaining -= shown.length;
      const last = shown.at(-1);
      if (last) position = positionAfter(walk, last, 0);
      return shown.length > 0 ? shown : undefined;
    };
    return new ListingExport((await read()) ?? [], read);
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
    const columns = ['id', ...repository.definition.sortableColumns].filter(
      (column) => column === 'id' || repository.isTimestamp(column),
    );
    let counted = false;
    for (const column of columns) {
      const query = { ...filters, sort: column } as ListingQuery;
      const walk = this.walkOf(repository, query, PLATFORM, this.defaultLimit);
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

  /** What a request walks: its criteria, their cache key and what its cursors are bound to. */
  private walkOf<TItem extends { id: number }>(
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
      // The scope is among the conditions; named again so that no two scopes share a binding.
      binding: `${key}|${query.sort}|${principal.organizationId ?? '*'}`,
      limit: query.limit ?? this.defaultLimit,
      afterId: query.after_id,
      tail: criteria.sortColumn === 'id' && criteria.direction === 'ASC',
      window: once(() =>
        timeWindowOf(repository, query, principal, (c) => this.planned(repository, c, depth)),
      ),
    };
  }

  /**
   * The criteria with the plan that reads them cheapest (`choosePlan`), priced from the totals the
   * cache holds. A condition with no total of its own yet is counted in the background, when few
   * rows are at stake, so that later plans are priced on counts rather than guesses.
   */
  private planned<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    criteria: ListingCriteria,
    depth: number,
  ): ListingCriteria {
    const { definition } = repository;
    // The whole table's histograms: their bounds and shares hold under any scope and filter.
    const tableKey = criteriaKey(definition.resource, { ...criteria, conditions: [] });
    const histogramOf = (column: string) => {
      const counted = this.counts.peek(bucketsKey(tableKey, column));
      if (!counted?.buckets) return undefined;
      const size = column === 'id' ? KEYSET_BUCKET : TIME_BUCKET_SECONDS * 1000;
      return { size, buckets: counted.buckets, maxId: counted.maxId };
    };
    const implied = impliedIdBounds(criteria, histogramOf);
    // The implied bounds are a range of ids: the primary key's walk is priced on their stretch.
    const bounded = implied.length
      ? {
          ...criteria,
          implied,
          bound: { ...criteria.bound, ranges: new Set([...criteria.bound.ranges, 'id']) },
        }
      : criteria;
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
    const filteredWalk =
      plan.kind === 'walk' &&
      [...bounded.conditions, ...(bounded.implied ?? [])].some((c) => !c.idRange);
    return {
      ...bounded,
      index: plan.index ?? (filteredWalk ? PRIMARY_KEY : undefined),
      countIndex: plan.countIndex,
      uniqueSort: plan.uniqueSort,
    };
  }

  private async numberedPage<TItem extends { id: number }>(
    walk: Walk<TItem>,
    pageNumber: number,
  ): Promise<Page<TItem>> {
    const { repository, criteria, limit } = walk;
    const offset = (pageNumber - 1) * limit;
    // When this request counts in full, it reads its page in the count's snapshot.
    let countedWithPage: TItem[] | undefined;
    const countWithPage: TotalCounter = async (previous) => {
      if (previous) return this.advancing(walk, false)(previous);
      const result = await repository.countAndFindPage(criteria, offset, limit, this.options);
      countedWithPage = result.items;
      return { ...result.total, countedAt: Date.now() };
    };
    const counted = await this.total(walk, countWithPage);
    // A page past the end is answered without walking the index to its end.
    const items =
      countedWithPage ??
      (offset < counted.total
        ? ((await this.positionedPage(walk, offset, counted.total)) ??
          (await repository.findPageAfterCount(criteria, offset, limit, counted, this.options)))
        : []);
    return this.page(walk, items, offset, counted.total, offset + items.length < counted.total);
  }

  /**
   * A page more than DEEP_PAGE_ROWS rows from both ends, found through the criteria's histogram of
   * rows per bucket of the sort column (cached and advanced like a total): the rows before the
   * page's bucket are summed, not walked, and the page is read forward from the bucket's start,
   * skipping at most a bucket's rows. Undefined (the page is walked as usual) where the sort has no
   * buckets (names, e-mails), for a keyset walk, and until the histogram has been counted once,
   * in the background. As stale as the totals: a row added or removed since shifts the page.
   */
  private async positionedPage<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    total: number,
  ): Promise<TItem[] | undefined> {
    const { repository, criteria, limit } = walk;
    const depth = Math.min(offset, total - offset - limit);
    if (depth < Math.min(ROLLUP_POSITION_ROWS, this.deepPageRows)) return undefined;
    if (splitKeyset(criteria)) return undefined;
    const { sortColumn: column } = criteria;
    const bucket: SortBucket | undefined =
      column === 'id'
        ? { column, size: KEYSET_BUCKET }
        : repository.isTimestamp(column)
          ? { column, size: TIME_BUCKET_SECONDS }
          : undefined;
    if (!bucket) return undefined;
    // `[rows, start, end)` per bucket, ascending, in the column's units (ids, or seconds). The
    // rollup's cost nothing to read: they position any page but the first few.
    let spans = await this.rolledSpans(walk, column);
    if (!spans && depth < this.deepPageRows) return undefined;
    if (!spans) {
      const window = walk.window();
      const histogram =
        window?.column === column
          ? await this.windowHistogram(walk, window)
          : await this.histogram(walk, criteria, bucket);
      const buckets = histogram?.buckets ?? [];
      if (!histogram || buckets.some(([index]) => index < 0)) return undefined;
      spans = buckets.map(([index, rows]) => [
        rows,
        index * bucket.size,
        (index + 1) * bucket.size,
      ]);
    }
    let before = 0;
    for (const [rows, start, end] of criteria.direction === 'ASC' ? spans : [...spans].reverse()) {
      if (before + rows > offset) {
        const edge = (value: number) => (column === 'id' ? value : new Date(value * 1000));
        const from: Condition =
          criteria.direction === 'ASC'
            ? { sql: `t.${column} >= :bucket_edge`, params: { bucket_edge: edge(start) } }
            : { sql: `t.${column} < :bucket_edge`, params: { bucket_edge: edge(end) } };
        if (column === 'id') from.idRange = true;
        from.binds = { column, range: true };
        // Planned again for the short stretch it reads from the bucket's edge.
        const ranges = new Set([...criteria.bound.ranges, column]);
        const within = this.planned(
          repository,
          {
            ...criteria,
            conditions: [...criteria.conditions, from],
            bound: { ...criteria.bound, ranges },
          },
          offset - before + limit,
        );
        return repository.findForward(within, offset - before, limit, this.options);
      }
      before += rows;
    }
    return undefined;
  }

  /**
   * The walk's total, cached per criteria: shared by all its cursor steps and numbered pages.
   * `onMiss` counts when the request is the one counting (by default, count alone); a recount
   * ahead of expiry runs in the background. A keyset total is worked out from its histogram.
   */
  private async total<TItem extends { id: number }>(
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
      walk.repository.count(idsAbove(walk.criteria, rolled.maxId), this.options),
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
  ): Promise<[number, number, number][] | undefined> {
    const rolled = this.rollups.spans(walk.repository, walk.criteria, column);
    if (!rolled) return undefined;
    const edges = await Promise.all(
      rolled.edges.map(async ({ from, to, start, end }): Promise<[number, number, number]> => [
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
    const edge = this.planned(repository, { ...criteria, conditions, bound, implied: [] }, 1);
    const key = criteriaKey(repository.definition.resource, edge);
    const counted = await this.counts.get(key, () => repository.count(edge, this.options));
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
        this.options,
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
   * Counts afresh, or advances the total it replaces by counting only the rows appended since
   * (ids above its maximum), a short range at the end of the id index. A full count, which takes
   * in deleted rows, runs when there is no total yet and, once COUNT_CACHE_FULL_RECOUNT_MS has
   * passed, in the background (`background`), under the recount's longer limit. `count` counts
   * the walk's total by default; a keyset walk's histogram counts rows per id bucket.
   */
  private advancing<TItem extends { id: number }>(
    walk: Walk<TItem>,
    background: boolean,
    criteria: ListingCriteria = walk.criteria,
    count: (criteria: ListingCriteria, options: PageOptions) => Promise<ListingTotal> = (
      what,
      options,
    ) => walk.repository.count(what, options),
  ): TotalCounter {
    const options = background ? this.recountOptions : this.options;
    return async (previous) => {
      if (previous && !(background && this.fullRecountDue(previous))) {
        return advanced(previous, await count(idsAbove(criteria, previous.maxId), options));
      }
      return { ...(await count(criteria, options)), countedAt: Date.now() };
    };
  }

  private fullRecountDue(total: ListingTotal): boolean {
    return total.countedAt === undefined || Date.now() - total.countedAt >= this.fullRecountMs;
  }

  /**
   * The page, with the cursor of its `next` link. An ascending walk in id order always goes on
   * (tail polling), and holds back its newest rows (TAIL_HOLDBACK_MS) and any after them, which a
   * row with a lower id still being committed could otherwise overtake.
   */
  private page<TItem extends { id: number }>(
    walk: Walk<TItem>,
    items: TItem[],
    offset: number,
    total: number,
    /** Rows follow this page's in the walk's order. */
    more: boolean,
    from?: WalkPosition,
  ): Page<TItem> {
    const { limit, tail } = walk;
    const shown = tail ? this.heldBack(items) : items;
    const last = shown.at(-1);
    let next: WalkPosition | undefined;
    // Held-back rows (or none yet) end an ascending id walk for now, not for good: it goes on.
    if (last && (tail || more)) {
      next = positionAfter(walk, last, offset + shown.length);
    } else if (!last && tail && (from || offset === 0)) {
      // An empty tail: the next poll starts where this one did.
      next = from ?? { value: null, id: walk.afterId ?? 0, offset: 0 };
    }
    const cursor = next && this.cursors.encode(walk.binding, next);
    return new Page(shown, Math.floor(offset / limit) + 1, limit, total, cursor);
  }

  private heldBack<TItem>(items: TItem[]): TItem[] {
    if (this.tailHoldbackMs <= 0 || items.length === 0) return items;
    const cutoff = new Date(Date.now() - this.tailHoldbackMs).toISOString();
    const first = items.findIndex((item) => {
      const created = (item as Record<string, unknown>).created_at;
      return typeof created === 'string' && created >= cutoff;
    });
    return first < 0 ? items : items.slice(0, first);
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
      return repository.count(walk.criteria, this.options);
    }
    const [histogram, within] = await Promise.all([
      this.counts.get(
        key,
        this.advancing(walk, false, base, byBucket),
        this.advancing(walk, true, base, byBucket),
      ),
      repository.count({ ...base, conditions: [...base.conditions, near] }, this.options),
    ]);
    let beyond = 0;
    for (const [index, rows] of histogram.buckets ?? []) {
      if (upwards ? index > bucket : index < bucket) beyond += rows;
    }
    return { total: beyond + within.total, maxId: histogram.maxId };
  }
}

/**
 * Id bounds implied by a request's time ranges, from the table's hourly histogram of that column,
 * whose buckets keep their lowest and highest id: rows at or after `from` have ids at or above
 * the lowest id of the buckets from `from`'s on, rows before `to` ids at or below the highest of
 * those up to `to`'s, or above every id the histogram has seen (appended since). One bucket more
 * on each side leaves room for a row committed late. Where ids grow with time (a log), a walk in
 * id order then starts and ends at its window instead of passing every row outside it.
 */
function impliedIdBounds(
  criteria: ListingCriteria,
  histogramOf: (column: string) => (Histogram & { maxId: number }) | undefined,
): Condition[] {
  const implied: Condition[] = [];
  for (const [i, { binds, between }] of criteria.conditions.entries()) {
    if (!binds?.range || !between || binds.column === 'id') continue;
    const histogram = histogramOf(binds.column);
    if (!histogram || histogram.buckets.some(([, , first]) => first === undefined)) continue;
    const { size, buckets, maxId } = histogram;
    const name = `implied_${i}`;
    if (between.from !== undefined) {
      const edge = Math.floor(between.from / size) - 1;
      const ids = buckets.filter(([index]) => index >= edge).map(([, , first]) => first!);
      const lowest = ids.length ? Math.min(...ids) : maxId + 1;
      implied.push({
        sql: `t.id >= :${name}_from`,
        params: { [`${name}_from`]: lowest },
        idRange: true,
        binds: { column: 'id', range: true },
        between: { from: lowest },
      });
    }
    if (between.to !== undefined) {
      const edge = Math.floor(between.to / size) + 1;
      const ids = buckets.filter(([index]) => index <= edge).map(([, , , last]) => last!);
      const highest = ids.length ? Math.max(...ids) : 0;
      if (highest >= maxId) continue; // every id the histogram has seen: no bound
      implied.push({
        sql: `(t.id <= :${name}_to OR t.id > :${name}_seen)`,
        params: { [`${name}_to`]: highest, [`${name}_seen`]: maxId },
        binds: { column: 'id', range: true },
        between: { to: highest },
      });
    }
  }
  return implied;
}

/** Whom the warm-up counts for: every organization's rows, as a platform-wide token sees them. */
const PLATFORM: Principal = {
  tokenId: 0,
  tokenName: 'count-cache warm-up',
  scopes: new Set(),
  organizationId: null,
};

/** Rows from either end past which a page is positioned from the rollup, where it answers. */
const ROLLUP_POSITION_ROWS = 1000;

/** Rows an export reads per statement. */
const EXPORT_CHUNK_ROWS = 1000;

/** Ids per keyset bucket: the most a keyset step counts by itself. */
const KEYSET_BUCKET = 4096;

/** A timestamp sort's bucket: an hour (23k rows at 50M login activities over 90 days). */
const TIME_BUCKET_SECONDS = 3600;

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
  countIndex: PRIMARY_KEY, // a short range at the end of the ids, whatever else the filters allow
  conditions: [
    ...criteria.conditions,
    { sql: 't.id > :counted_max_id', params: { counted_max_id: maxId }, idRange: true },
  ],
});

interface Walk<TItem extends { id: number }> {
  repository: ListingRepository<TItem>;
  criteria: ListingCriteria;
  /** The cache key of the walk's total. */
  key: string;
  /** What the walk's cursors are signed with: filters, sort and scope. */
  binding: string;
  limit: number;
  afterId?: number;
  /** An ascending walk in id order: tail polling and the holdback apply. */
  tail: boolean;
  /** Its time window, when its totals can be cut from a shared histogram (worked out once). */
  window: () => TimeWindow | undefined;
}

/** A walk's time window on one timestamp column, and the same filters without it. */
interface TimeWindow {
  column: string;
  from?: Date;
  to?: Date;
  /** The walk's filters and scope without the window, in the column's order. */
  base: ListingCriteria;
  baseKey: string;
}

/**
 * The query's window, when every range filter it has is on one timestamp column and the rest of
 * its filters can be read in that column's order; undefined otherwise (and for keyset walks).
 */
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

/** The cache key of a criteria's histogram by `column` (ids: the keyset walks' one). */
const bucketsKey = (key: string, column: string) =>
  column === 'id' ? `${key}|buckets` : `${key}|buckets:${column}`;

function once<T>(compute: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) [value, done] = [compute(), true];
    return value;
  };
}

/** The criteria of the rows after `position` in `walk`'s order. */
const after = <TItem extends { id: number }>(walk: Walk<TItem>, position: WalkPosition) =>
  afterPosition(walk.criteria, {
    id: position.id,
    value: walk.repository.sortParameter(walk.criteria.sortColumn, position.value),
  });

/** The position just after `item`, with `offset` rows before it. */
const positionAfter = <TItem extends { id: number }>(
  walk: Walk<TItem>,
  item: TItem,
  offset: number,
): WalkPosition => ({
  value: walk.repository.sortValueOf(item, walk.criteria.sortColumn),
  id: item.id,
  offset,
});

interface Keyset {
  /** The criteria without the keyset bound. */
  base: ListingCriteria;
  bound: number;
  /** `after_id` (ids above the bound) rather than `before_id`. */
  upwards: boolean;
}

function splitKeyset(criteria: ListingCriteria): Keyset | undefined {
  const index = criteria.conditions.findIndex(
    (condition) => 'after_id' in condition.params || 'before_id' in condition.params,
  );
  if (index < 0) return undefined;
  const condition = criteria.conditions[index];
  const upwards = 'after_id' in condition.params;
  const bound = Number(upwards ? condition.params.after_id : condition.params.before_id);
  if (!Number.isSafeInteger(bound)) return undefined;
  const conditions = criteria.conditions.filter((_, i) => i !== index);
  // Both bounds at once: count plainly.
  if (conditions.some((c) => 'after_id' in c.params || 'before_id' in c.params)) return undefined;
  return { base: { ...criteria, conditions }, bound, upwards };
}
