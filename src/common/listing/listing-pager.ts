import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import type { TotalCounter } from './count-cache';
import { ListingCursors, WalkPosition } from './listing-cursor';
import { columnSql } from './listing-definition';
import {
  afterPosition,
  idsAbove,
  prefixStretch,
  upToPosition,
  type Condition,
  type ListingCriteria,
} from './listing-criteria';
import { ListingExport, ListingExporter } from './listing-export';
import { TOP_SORT_ROWS } from './listing-planner';
import type { ListingFormat } from './listing-format.decorator';
import type { ListingQuery } from './listing-query.dto';
import { ListingTotals } from './listing-totals';
import { after, ListingWalks, positionAfter, Walk, walkStartPosition } from './listing-walk';
import type { ListingRepository, ListingTotal, Mark, Rows } from './listing.repository';
import { Page } from './page';

/** `q` sorted by name or e-mail: along that column's stretch rather than a sort of every match. */
const stretchOf = (criteria: ListingCriteria) =>
  criteria.sorted ? prefixStretch(criteria) : undefined;

/** How far before the page's even place the marks a window's count reaches lie (shares of it). */
const SHORTFALLS = [1 / 4, 1 / 32];

/** The marks in the walk's order, with the rows up to each, itself included, when taken. */
function inWalkOrder<TItem extends { id: number }>(
  { criteria }: Walk<TItem>,
  marked: ListingTotal,
) {
  const ascending = criteria.direction === 'ASC';
  return {
    marks: ascending ? marked.marks! : [...marked.marks!].reverse(),
    upTo: ([rank]: Mark) => (ascending ? rank + 1 : marked.total - rank),
  };
}

/** A mark's row as a walk position. */
const markPosition = <TItem extends { id: number }>(
  { repository, criteria }: Walk<TItem>,
  [, value, id]: Mark,
) => ({ value: repository.sortParameter(criteria.sortColumn, value), id });

/** Rows from either end past which a page is positioned from the rollup, where it answers. */
const ROLLUP_POSITION_ROWS = 1000;

/** A listing's pages, numbered or a cursor's step, with their total and next cursor. */
@Injectable()
export class ListingPager {
  private readonly deepPageRows: number;
  private readonly changeMarginMs: number;

  constructor(
    private readonly walks: ListingWalks,
    private readonly totals: ListingTotals,
    private readonly cursors: ListingCursors,
    private readonly exporter: ListingExporter,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.deepPageRows = config.deepPageRows;
    this.changeMarginMs = config.tailHoldbackMs;
  }

  /** The request's page, or with `ndjson` its export: what a listing's service answers. */
  list<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
    format: ListingFormat,
  ): Promise<Page<TItem> | ListingExport> {
    return format === 'ndjson'
      ? this.exporter.export(repository, query, principal)
      : this.paginate(repository, query, principal);
  }

  async paginate<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<Page<TItem>> {
    const limit = query.limit ?? this.walks.defaultLimit;
    const depth = query.cursor === undefined ? (query.page ?? 1) * limit : limit;
    const walk = this.walks.of(repository, query, principal, depth);
    if (query.cursor === undefined) return this.numberedPage(walk, query.page ?? 1);
    const position = this.cursors.decode(walk.binding, query.cursor, walk.earlierBinding);
    // One row more than the page says whether the walk goes on, whatever the (cached) total.
    const [counted, read] = await Promise.all([
      this.totals.of(walk),
      repository.findForward(after(walk, position), 0, walk.limit + 1, this.walks.options),
    ]);
    const more = read.items.length > walk.limit;
    const items = more ? read.items.slice(0, walk.limit) : read.items;
    return this.page(walk, { ...read, items }, position.offset, counted.total, more, position);
  }

  private async numberedPage<TItem extends { id: number }>(
    walk: Walk<TItem>,
    pageNumber: number,
  ): Promise<Page<TItem>> {
    const { repository, criteria, limit } = walk;
    const offset = (pageNumber - 1) * limit;
    // When this request counts in full, it reads its page in the count's snapshot.
    let countedWithPage: Rows<TItem> | undefined;
    const countWithPage: TotalCounter = async (previous) => {
      if (previous) return this.totals.advancing(walk, false)(previous);
      // Past a sort's top rows, `q` by name or e-mail is read along that column's stretch.
      const deep = offset + limit > Math.min(TOP_SORT_ROWS, this.deepPageRows);
      const stretch = deep ? stretchOf(criteria) : undefined;
      const { total, ...rows } = await repository.countAndFindPage(
        criteria,
        offset,
        limit,
        this.walks.options,
        stretch,
      );
      countedWithPage = rows;
      return { ...total, countedAt: Date.now() };
    };
    const counted = await this.totals.of(walk, countWithPage);
    // A page at or past the cached end counts the rows appended (or changed) since, with its read.
    const read: Rows<TItem> & { total?: number } =
      countedWithPage ??
      ((offset < counted.total && (await this.positionedPage(walk, offset, counted))) ||
        (await this.pageAfterCount(walk, offset, counted)));
    // A page read from the end knows the total of its own snapshot.
    const total = read.total ?? counted.total;
    const more = offset + read.items.length < total;
    return this.page(walk, read, offset, total, more);
  }

  /** The page read after its (cached) total; counted afresh with it where rows may have moved. */
  private async pageAfterCount<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    counted: ListingTotal,
  ): Promise<Rows<TItem> & { total?: number }> {
    const { repository, criteria, limit } = walk;
    const started = Date.now();
    const read = await repository.findPageAfterCount(
      criteria,
      offset,
      limit,
      counted,
      this.walks.options,
      this.changedSince(walk, counted.countedAt),
    );
    if (read.recounted) this.totals.replace(walk, { ...read.recounted, countedAt: started });
    return read;
  }

  /**
   * Since when rows changed would make counts taken at `countedAt` (a total, spans) wrong for the
   * walk: its filters bind a column an update may change, in a listing that records changes
   * (`changedAt`); a page read from the end then counts afresh if any row changed since. Late
   * commits are allowed for as in tail walks.
   */
  private changedSince<TItem extends { id: number }>(
    { repository, criteria }: Walk<TItem>,
    countedAt: number | undefined,
  ): Date | undefined {
    const { changedAt, immutableTimestamps = [] } = repository.definition;
    const moves = criteria.conditions.some(
      ({ idRange, binds }) => !idRange && !immutableTimestamps.includes(binds?.column ?? ''),
    );
    if (!changedAt || !moves) return undefined;
    return new Date((countedAt ?? 0) - this.changeMarginMs);
  }

  /**
   * A page far from both ends, read forward from the start of its bucket of the sort column, the
   * rows before that bucket summed rather than walked; undefined where there are no buckets.
   */
  private async positionedPage<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    counted: ListingTotal,
  ): Promise<Rows<TItem> | undefined> {
    const { repository, criteria, limit } = walk;
    const { total } = counted;
    const depth = Math.min(offset, total - offset - limit);
    // A keyset bound in a time order: even page 1 starts at the hour its first match is in, rather
    // than walking the index through the hours before the bound.
    const keysetInTime = criteria.sortColumn !== 'id' && criteria.conditions.some((c) => c.keyset);
    if (depth < Math.min(ROLLUP_POSITION_ROWS, this.deepPageRows) && !keysetInTime)
      return undefined;
    // Counts an update may have made wrong (a user's role changed): walked where a walk is cheap.
    const since =
      depth < this.deepPageRows ? this.changedSince(walk, counted.countedAt) : undefined;
    if (since && (await repository.hasChangedSince(since, this.walks.options))) return undefined;
    const stretch = stretchOf(criteria);
    const inStretch =
      stretch && (await repository.findInStretch(stretch, offset, limit, this.walks.options));
    if (inStretch) return inStretch;
    const deep = depth >= this.deepPageRows;
    const bucketed = await this.totals.spans(walk, deep ? depth : undefined);
    if (!bucketed) {
      return deep
        ? this.markedPage(walk, offset, total)
        : this.pageFromOwnMarks(walk, offset, total);
    }
    // The spans may be older than the total (a rollup read before a role changed, the total since).
    const spansSince = since && this.changedSince(walk, bucketed.countedAt);
    if (spansSince && spansSince < since) {
      if (await repository.hasChangedSince(spansSince, this.walks.options)) return undefined;
    }
    const { spans } = bucketed;
    const column = criteria.sortColumn;
    let before = 0;
    for (const [rows, start, end] of criteria.direction === 'ASC' ? spans : [...spans].reverse()) {
      if (before + rows > offset) {
        const ascending = criteria.direction === 'ASC';
        const [operator, edge] = ascending ? ['>=', start] : ['<', end];
        // Ids, or ms: where a trial walk starts, and the stretch's share of a histogram.
        const at = column === 'id' ? edge : edge * 1000;
        const from: Condition = {
          sql: `${columnSql(column)} ${operator} :bucket_edge`,
          params: { bucket_edge: column === 'id' ? at : new Date(at) },
          binds: { column, range: true },
          between: ascending ? { from: at } : { to: at - 1 },
          ...(column === 'id' && { idRange: true }),
        };
        const conditions = [...criteria.conditions, from];
        return this.readFrom(walk, { ...criteria, conditions }, offset - before);
      }
      before += rows;
    }
    return undefined;
  }

  /**
   * A deep page in an order without buckets (names), read forward from the last of the criteria's
   * marks before it, like a cursor's step; the rows appended since the marks are counted up to it.
   * Before a window has marks of its own, its base's serve, less the rows outside the window.
   */
  private async markedPage<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    total: number,
  ): Promise<Rows<TItem> | undefined> {
    const marked = await this.totals.marks(walk, total);
    if (marked?.marks?.length) return this.pageFromMark(walk, offset, marked);
    const base = this.totals.windowBaseMarks(walk);
    if (!base) return undefined;
    // The rows a walk to the page would pass; the window's matches spread evenly, `total` of the base's.
    const depth = Math.min(offset, total - offset - walk.limit);
    if (base.total - total <= depth) {
      return this.pageFromMark(walk, offset, base, this.totals.outsideUpTo(walk, base));
    }
    if (total * total < depth * base.total) return this.pageAmongMarks(walk, offset, total, base);
    return undefined;
  }

  /**
   * A page short of DEEP_PAGE_ROWS in an order without buckets, from the criteria's own marks
   * where no row has changed since they were taken: the walk to it may pass far more entries than
   * it holds (`role_id=2&sort=email` checks the role on the way, 1M entries for page 2,500).
   */
  private async pageFromOwnMarks<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    total: number,
  ): Promise<Rows<TItem> | undefined> {
    const { repository } = walk;
    const marked = await this.totals.marks(walk, total);
    if (!marked?.marks?.length) return undefined;
    // Any change since (a name, a role) may have moved a row past a mark: then it is walked.
    const since = new Date((marked.countedAt ?? 0) - this.changeMarginMs);
    const changes = repository.definition.changedAt !== undefined;
    if (changes && (await repository.hasChangedSince(since, this.walks.options))) return undefined;
    return this.pageFromMark(walk, offset, marked);
  }

  /**
   * A deep page of a window smaller than the walk to it (`updated_from=<a month ago>&sort=name`):
   * the window's rows up to a few of its base's marks just before where the page would lie, were
   * they spread evenly, counted in one pass of the window, then a walk from the last one before it.
   */
  private async pageAmongMarks<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    inside: number,
    marked: ListingTotal,
  ): Promise<Rows<TItem> | undefined> {
    const { marks, upTo } = inWalkOrder(walk, marked);
    const even = (offset * marked.total) / inside;
    const candidates = [
      ...new Set(SHORTFALLS.map((share) => marks.findLast((m) => upTo(m) <= even * (1 - share)))),
    ].filter((mark) => mark !== undefined);
    if (!candidates.length) return undefined;
    const positions = candidates.map((mark) => markPosition(walk, mark));
    const counts = await walk.repository.countUpTo(walk.criteria, positions, this.walks.options);
    const last = counts.findLastIndex((rows) => rows <= offset);
    if (last < 0) return undefined;
    return this.readFrom(
      walk,
      afterPosition(walk.criteria, positions[last]),
      offset - counts[last],
    );
  }

  private async pageFromMark<TItem extends { id: number }>(
    walk: Walk<TItem>,
    offset: number,
    marked: ListingTotal,
    /** The marked rows up to a mark that the walk's criteria leave out (a window's outside). */
    outsideUpTo?: (position: { value: unknown; id: number }) => Promise<number>,
  ): Promise<Rows<TItem> | undefined> {
    const { repository, criteria } = walk;
    const { marks, upTo } = inWalkOrder(walk, marked);
    const { options } = this.walks;
    const appended = (what: ListingCriteria) =>
      repository.count(idsAbove(what, marked.maxId), options).then(({ total }) => total);
    // The last mark that the rows appended since, wherever they fall, cannot push past the page;
    // with rows left out, those before a first guess bring it nearer (more lie before a later one).
    const allAppended = await appended(criteria);
    const lastBefore = (left: number) =>
      marks.findLast((candidate) => upTo(candidate) - left + allAppended <= offset);
    let mark = lastBefore(0);
    if (!mark) return undefined;
    let left = 0;
    if (outsideUpTo) {
      left = await outsideUpTo(markPosition(walk, mark));
      const nearer = lastBefore(left)!; // this mark or a later one
      if (nearer !== mark) [mark, left] = [nearer, await outsideUpTo(markPosition(walk, nearer))];
    }
    const position = markPosition(walk, mark);
    const before = allAppended && (await appended(upToPosition(criteria, position)));
    const skip = offset - (upTo(mark) - left) - before;
    return this.readFrom(walk, afterPosition(criteria, position), skip);
  }

  /** The page `skip` rows into `from` (past a position or a bucket's edge), read forward. */
  private readFrom<TItem extends { id: number }>(
    { repository, limit }: Walk<TItem>,
    from: ListingCriteria,
    skip: number,
  ): Promise<Rows<TItem>> {
    const bound = { ...from.bound, ranges: new Set([...from.bound.ranges, from.sortColumn]) };
    const within = this.walks.planned(repository, { ...from, bound }, skip + limit);
    return repository.findForward(within, skip, limit, this.walks.options);
  }

  /** The page with its `next` cursor; a walk with an open tail always goes on (tail polling). */
  private page<TItem extends { id: number }>(
    walk: Walk<TItem>,
    { items, completeAsOf }: Rows<TItem>,
    offset: number,
    total: number,
    /** Rows follow this page's in the walk's order. */
    more: boolean,
    from?: WalkPosition,
  ): Page<TItem> {
    const { limit } = walk;
    const shown = this.walks.heldBack(walk, items, completeAsOf);
    // Held-back rows (or none yet) end a walk with a tail for now, not for good: it goes on, also
    // where its window has closed (a back-dated row in it, its id not yet settled).
    const goesOn = this.walks.goesOn(walk, completeAsOf) || shown.length < items.length;
    const last = shown.at(-1);
    let next: WalkPosition | undefined;
    if (last && (goesOn || more)) {
      next = positionAfter(walk, last, offset + shown.length);
    } else if (!last && goesOn && (from || offset === 0)) {
      // An empty tail: the next poll starts where this one did.
      next = from ?? walkStartPosition(walk);
    } else if (!last && goesOn && items.length) {
      // A numbered page whose every row is held back: on from just before its first (ids are
      // integers; in a change feed the row's time stays, so it is the first after).
      next = positionAfter(walk, { ...items[0], id: items[0].id - 1 }, offset);
    }
    const cursor = next && this.cursors.encode(walk.binding, next);
    return new Page(shown, Math.floor(offset / limit) + 1, limit, total, cursor);
  }
}
