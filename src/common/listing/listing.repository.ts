import { Inject, Injectable } from '@nestjs/common';
import type { DiscoveryService } from '@nestjs/core';
import { DataSource, QueryRunner } from 'typeorm';
import type { ReadSource } from '../../database/read-replicas';
import {
  ReadOptions,
  ReadWork,
  Statement,
  StatementRunner,
  StatementRunners,
} from '../../database/statement-runner';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { sqlDatetimeText } from '../../database/row-values';
import { columnSql, type ListingDefinition, type SortDirection } from './listing-definition';
import {
  allConditions,
  idsAbove,
  trialWalk,
  upToCondition,
  upToPosition,
  type Condition,
  type ListingCriteria,
  type Stretch,
} from './listing-criteria';
import { PRIMARY_KEY, TOP_SORT_ROWS } from './listing-planner';

/**
 * A total as counted, with the table's highest id then (0 when empty): the rows appended since
 * are the ids above it, counted without counting the rest again.
 */
export interface ListingTotal {
  total: number;
  maxId: number;
  /** When the rows were last counted in full (ms since the epoch); advanced totals keep it. */
  countedAt?: number;
  /** A histogram's buckets, ascending: for totals of keyset walks and windows, and id bounds. */
  buckets?: Bucket[];
  /** Rows at even steps through the criteria's order, ascending: deep pages in a text order. */
  marks?: Mark[];
  /**
   * The rows counted above `settledId`, part of `total` and `buckets`: a row may still be committed
   * late below the highest id there, so the next advance counts them again.
   */
  recent?: { settledId: number; total: number; buckets?: Bucket[] };
}

/** `[rank, sort value, id]`: the row with `rank` rows before it in ascending order. */
export type Mark = [rank: number, value: string, id: number];

/**
 * `[bucket, rows, lowest id, highest id]`; edges cut from a window carry no ids. A histogram by
 * the changed column (`changedAt`) also carries each immutable timestamp's lowest and highest
 * second (`walkBoundOf`).
 */
export type Bucket = [
  bucket: number,
  rows: number,
  firstId?: number,
  lastId?: number,
  ...secondsRanges: number[],
];

/** Buckets of a sort column's values: `size` ids, or `size` seconds of a timestamp. */
export interface SortBucket {
  column: string;
  size: number;
}

export type PageOptions = ReadOptions;

/** What a listing selects for each row of a page: its own columns, and lookups. */
export interface ItemQuery {
  columns: readonly string[];
  /** UTC DATETIME columns, read as text and rewritten as ISO 8601 (cheaper than a Date each). */
  timestamps?: readonly string[];
  lookups?: readonly Lookup[];
}

/**
 * `name`: the `column` of the `table` row whose `id` the listing's `key` column holds. A scalar
 * subquery per page row, not a join: a join lets the optimizer start from the other table and sort.
 */
export interface Lookup {
  name: string;
  table: string;
  column: string;
  key: string;
}

type RawRow = Record<string, unknown>;

/**
 * Rows as read, and when the read was complete: every row committed on the primary before
 * `completeAsOf` was visible (on a replica, its start less the lag it may have had).
 */
export interface Rows<TItem> {
  items: TItem[];
  completeAsOf: number;
}

/**
 * The SQL every listing shares, written as text. A page is a deferred join (the ids from an index
 * walk, then their rows); a page in the far half is walked from the other end, which needs the
 * total of the very snapshot it reads (docs/architecture.md, The page statement).
 */
@Injectable() // so that listings inherit the constructor's injection (the DataSource)
export abstract class ListingRepository<TItem extends { id: number }> {
  abstract readonly definition: ListingDefinition;
  /** The columns and lookups of the listing's items: the one query a listing writes. */
  protected abstract readonly itemQuery: ItemQuery;
  constructor(protected readonly dataSource: DataSource) {}
  /** Injected into every listing (a property, so that subclasses keep their constructors). */
  @Inject(StatementRunners)
  protected readonly statementRunners!: StatementRunners;
  @Inject(APP_CONFIG)
  private readonly config!: AppConfig;
  /** The table's highest id as counts saw it, `[when, id]`, ascending: for `settledId`. */
  private readonly highestIdsSeen: [at: number, maxId: number][] = [];

  /** Turns a raw row of `itemQuery` into the listing's item (drivers differ in types). */
  protected abstract toItem(row: RawRow): TItem;

  /** The rows of `criteria`, or with `bucket` per bucket of its column (ids, or seconds since 1970). */
  async count(
    criteria: ListingCriteria,
    options: PageOptions = {},
    bucket?: SortBucket,
  ): Promise<ListingTotal> {
    return this.value(
      false,
      (runner, statements) => this.countIn(runner, statements, criteria, bucket),
      options,
    );
  }

  /**
   * Counts `criteria` (by `bucket`, with one) above `floor`, and in the same snapshot its rows
   * above the settled id as `recent`; above `floor`, every row is recent until a higher id settles.
   */
  async countSettled(
    criteria: ListingCriteria,
    bucket: SortBucket | undefined,
    floor: number | undefined,
    options: PageOptions = {},
  ): Promise<ListingTotal> {
    // Two statements (the rows, and those above the settled id) read one snapshot; one needs none.
    // Told as of now: a read that holds less (a replica's) settles no later id, so needs no more.
    const from = this.recentFrom(Date.now(), floor);
    return this.value(
      from !== undefined && !recentIsAll(from, floor),
      (runner, statements, completeAsOf) =>
        this.countSettledIn(runner, statements, criteria, completeAsOf, bucket, floor),
      options,
    );
  }

  /** `countSettled` on a read's connection, holding every row committed before `completeAsOf`. */
  private async countSettledIn(
    runner: QueryRunner,
    statements: StatementRunner,
    criteria: ListingCriteria,
    completeAsOf: number,
    bucket?: SortBucket,
    floor?: number,
  ): Promise<ListingTotal> {
    const counted = floor === undefined ? criteria : idsAbove(criteria, floor);
    const whole = await this.countIn(runner, statements, counted, bucket);
    const from = this.recentFrom(completeAsOf, floor);
    if (from === undefined) return whole;
    const recent = recentIsAll(from, floor)
      ? whole
      : await this.countIn(runner, statements, idsAbove(criteria, from), bucket);
    return { ...whole, recent: { settledId: from, total: recent.total, buckets: recent.buckets } };
  }

  /**
   * Where a count's recent rows start: the id settled as of what the read holds (a replica's rows
   * lag; one committed late below an id it shows may not be there yet); above `floor`, every row
   * until one settles. Before any id has settled (just after a start) every row is recent.
   */
  private recentFrom(completeAsOf: number, floor?: number): number | undefined {
    const settled = this.settledId(completeAsOf);
    if (settled === undefined && floor === undefined) {
      return this.config.tailHoldbackMs > 0 ? 0 : undefined;
    }
    return floor !== undefined && (settled === undefined || settled <= floor) ? floor : settled;
  }

  /**
   * The highest id a statement saw at least TAIL_HOLDBACK_MS before `asOf`: the rows up to it are
   * taken as committed, by counts and tail walks. Undefined until one is that old.
   */
  settledId(asOf = Date.now()): number | undefined {
    const before = asOf - this.config.tailHoldbackMs;
    const settled = this.highestIdsSeen.findLastIndex(([at]) => at <= before);
    return settled < 0 ? undefined : this.highestIdsSeen[settled][1];
  }

  /**
   * The id settled as of what `source` holds now (a replica's rows lag). With `wait`, just after a
   * start, once one is (a few seconds: its staleness and the hold-back); undefined if none comes.
   */
  async settledOn(source: ReadSource | undefined, wait = true): Promise<number | undefined> {
    const staleMs = () => source?.staleMs() ?? 0;
    const waitMs = wait ? this.config.tailHoldbackMs + staleMs() + SETTLING_WAIT_MS : 0;
    const until = Date.now() + waitMs;
    for (;;) {
      const settled = this.settledId(Date.now() - staleMs());
      if (settled !== undefined || Date.now() >= until) return settled;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Records the table's highest id a statement saw (when it had finished: later, not sooner). */
  private sawHighestId(maxId: number): void {
    const seen = this.highestIdsSeen;
    const [at, highest] = seen.at(-1) ?? [0, -1];
    const now = Date.now();
    // One a tenth of a second at most (a few dozen within the hold-back); skipping one only delays.
    if (maxId <= highest || now - at < 100) return;
    seen.push([now, maxId]);
    // Kept past the hold-back for as long as a replica in the rotation may lag, and a minute more:
    // a replica's read asks as of its lag before.
    const keptMs = this.config.tailHoldbackMs + this.config.database.replicaMaxLagMs + 60_000;
    const old = seen.findLastIndex(([when]) => when <= now - keptMs);
    if (old > 0) seen.splice(0, old);
  }

  /** Rows of ids `(above, upTo]` per value of `columns` and hour of `time` (a rollup's chunk). */
  async countByGroup(
    columns: readonly string[],
    time: string,
    above: number,
    upTo: number,
    options: PageOptions = {},
  ): Promise<Record<string, unknown>[]> {
    const groups = [...columns.map((column) => columnSql(column)), this.bucketOf(time, 3600)];
    return this.select<Record<string, unknown>>(
      {
        sql:
          `SELECT ${columns.map((column) => `${columnSql(column)} AS \`${column}\``).join(', ')}, ${groups.at(-1)} AS bucket,` +
          ` COUNT(*) AS n, MIN(t.id) AS first_id, MAX(t.id) AS last_id FROM ${this.from(PRIMARY_KEY)}` +
          ` WHERE t.id > :group_above AND t.id <= :group_up_to GROUP BY ${groups.join(', ')}`,
        params: { group_above: above, group_up_to: upTo },
      },
      options,
    );
  }

  /** The lowest id in `(above, upTo]`, undefined where there is none. */
  async lowestIdAbove(
    above: number,
    upTo: number,
    options: PageOptions = {},
  ): Promise<number | undefined> {
    const [row] = await this.select<{ id: unknown }>(
      {
        sql: `SELECT MIN(t.id) AS id FROM ${this.from(PRIMARY_KEY)} WHERE t.id > :above AND t.id <= :up_to`,
        params: { above, up_to: upTo },
      },
      options,
    );
    return row?.id === null || row?.id === undefined ? undefined : Number(row.id);
  }

  /** The table's highest id (0 when empty). */
  async highestIdNow(options: PageOptions = {}): Promise<number> {
    const [row] = await this.select<{ max_id: unknown }>(
      { sql: `SELECT ${this.highestId()} AS max_id`, params: {} },
      options,
    );
    const maxId = Number(row?.max_id ?? 0);
    this.sawHighestId(maxId);
    return maxId;
  }

  /**
   * The bucket of `size` ids, or seconds since 1970, a row is in: rounded down, times before 1970
   * too. Seconds are counted from year 1 (the earliest time a filter takes), never negative, so
   * that neither TIMESTAMPDIFF's nor the division's truncation toward zero rounds them up.
   */
  private bucketOf(column: string, size: number): string {
    const n = Math.trunc(size);
    const mysql = this.isMysql();
    const divided = (value: string) => (mysql ? `${value} DIV ${n}` : `(${value} / ${n})`);
    if (column === 'id') return divided('t.id');
    const sinceYearOne = mysql
      ? `TIMESTAMPDIFF(SECOND, '0001-01-01 00:00:00', ${columnSql(column)})`
      : `(CAST(strftime('%s', ${columnSql(column)}) AS INTEGER) + ${YEAR_ONE_SECONDS})`;
    // floor((s - Y) / n) = floor((s + shift·n - Y) / n) - shift, with s + shift·n - Y >= 0.
    const shift = Math.ceil(YEAR_ONE_SECONDS / n);
    const lead = shift * n - YEAR_ONE_SECONDS;
    return `(${divided(lead ? `(${sinceYearOne} + ${lead})` : sinceYearOne)} - ${shift})`;
  }

  /** Whether `column` holds timestamps (UTC DATETIMEs). */
  isTimestamp(column: string): boolean {
    return this.itemQuery.timestamps?.includes(column) ?? false;
  }

  private timeOrdersOnce?: ReadonlySet<string>;

  /** The orders that follow time, `id` first, then each sortable timestamp: they have buckets. */
  get timeOrders(): ReadonlySet<string> {
    this.timeOrdersOnce ??= new Set(
      ['id', ...this.definition.sortableColumns].filter(
        (column) => column === 'id' || this.isTimestamp(column),
      ),
    );
    return this.timeOrdersOnce;
  }

  /**
   * Counts and reads the page in one snapshot; with `stretch` (`prefixStretch`), along the sort
   * column's stretch where it can (`findInStretch`).
   */
  async countAndFindPage(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    options: PageOptions = {},
    stretch?: Stretch,
  ): Promise<Rows<TItem> & { total: ListingTotal }> {
    const { value, completeAsOf } = await this.statementRunners.read(
      true,
      async (runner, statements, completeAsOf) => {
        const total = await this.countSettledIn(runner, statements, criteria, completeAsOf);
        const items =
          (stretch && (await this.stretchIn(runner, statements, stretch, offset, limit))) ??
          (await this.pageIn(runner, statements, criteria, offset, limit, total.total));
        return { total, items };
      },
      options,
    );
    return { ...value, completeAsOf };
  }

  /**
   * Reads a page given a total counted earlier (e.g. cached); from the end, or at or past that
   * total's end, first counts in the page's snapshot the rows appended since (a short range at the
   * end of the ids), or with `changedSince`, where a row has changed since then, every row
   * (`recounted`): `total` is then the snapshot's. Past it, the page is `[]` without a read.
   */
  async findPageAfterCount(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    known: ListingTotal,
    options: PageOptions = {},
    changedSince?: Date,
  ): Promise<Rows<TItem> & { total?: number; recounted?: ListingTotal }> {
    const nearEnd = offset >= known.total || walksFromEnd(offset, limit, known.total);
    let recounted: ListingTotal | undefined;
    let total: number | undefined;
    const rows = await this.readRows(
      nearEnd,
      async (runner, statements, completeAsOf) => {
        if (nearEnd && changedSince && (await this.changedIn(runner, statements, changedSince))) {
          recounted = await this.countSettledIn(runner, statements, criteria, completeAsOf);
          total = recounted.total;
        } else if (nearEnd) {
          // From the settled part: the rows above it are counted again, with any committed late.
          const settled = settledPart(known);
          const appended = await this.countIn(
            runner,
            statements,
            idsAbove(criteria, settled.maxId),
          );
          total = settled.total + appended.total;
        }
        return this.pageIn(runner, statements, criteria, offset, limit, total ?? known.total);
      },
      options,
    );
    return { ...rows, total, recounted };
  }

  /**
   * The page `offset` rows into a prefix's union sorted by one of its columns (`prefixStretch`),
   * read along that column's stretch after counting, in the same snapshot, the other rows before
   * it; undefined where one lies within the stretch or the page reaches past its end.
   */
  async findInStretch(
    stretch: Stretch,
    offset: number,
    limit: number,
    options: PageOptions = {},
  ): Promise<Rows<TItem> | undefined> {
    const { value: items, completeAsOf } = await this.statementRunners.read(
      true,
      (runner, statements) => this.stretchIn(runner, statements, stretch, offset, limit),
      options,
    );
    return items && { items, completeAsOf };
  }

  private async stretchIn(
    runner: QueryRunner,
    statements: StatementRunner,
    { own, others }: Stretch,
    offset: number,
    limit: number,
  ): Promise<TItem[] | undefined> {
    const end = Number.MAX_SAFE_INTEGER;
    const upTo = async (item: TItem) => {
      const value = this.sortParameter(own.sortColumn, this.sortValueOf(item, own.sortColumn));
      const counted = upToPosition(others, { value, id: item.id });
      return (await this.countIn(runner, statements, counted)).total;
    };
    const reversed = { ...own, direction: reverse(own.direction) };
    const [first] = await this.pageIn(runner, statements, own, 0, 1, end);
    const [last] = await this.pageIn(runner, statements, reversed, 0, 1, end);
    if (!first || !last) return undefined;
    const before = await upTo(first);
    if (offset < before || (await upTo(last)) > before) return undefined;
    const page = await this.pageIn(runner, statements, own, offset - before, limit, end);
    return page.length === limit ? page : undefined;
  }

  /**
   * The rows of `criteria` up to each of `positions` in its order, counted in one pass of the
   * index that carries the sort column (`bucketIndex`): which of a few marks a page lies past.
   */
  async countUpTo(
    criteria: ListingCriteria,
    positions: { value: unknown; id: number }[],
    options: PageOptions = {},
  ): Promise<number[]> {
    const { where, params } = this.where(criteria);
    const sums = positions.map((position, i) => {
      const upTo = upToCondition(criteria, position, `up_to_${i}`);
      Object.assign(params, upTo.params);
      return `SUM(CASE WHEN ${this.sqlOf(upTo)} THEN 1 ELSE 0 END) AS up_to_${i}`;
    });
    const [row] = await this.select<Record<string, unknown>>(
      { sql: `SELECT ${sums.join(', ')} FROM ${this.from(criteria.bucketIndex)}${where}`, params },
      options,
    );
    return positions.map((_, i) => Number(row?.[`up_to_${i}`] ?? 0));
  }

  /** Whether a row of the table was changed at or after `since` (by `definition.changedAt`). */
  hasChangedSince(since: Date, options: PageOptions = {}): Promise<boolean> {
    return this.value(
      false,
      (runner, statements) => this.changedIn(runner, statements, since),
      options,
    );
  }

  /** `hasChangedSince` on `runner`: within the snapshot of a read that goes on with it. */
  private async changedIn(
    runner: QueryRunner,
    statements: StatementRunner,
    since: Date,
  ): Promise<boolean> {
    const column = this.definition.changedAt!;
    const changed = await statements.run(runner, {
      sql: `SELECT t.id FROM \`${this.definition.table}\` t WHERE ${columnSql(column)} >= :changed_since LIMIT 1`,
      params: { changed_since: since },
    });
    return changed.length > 0;
  }

  /** The rows `offset` to `offset + limit` of `criteria`, walked forward from its start. */
  async findForward(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    options: PageOptions = {},
  ): Promise<Rows<TItem>> {
    return this.readRows(
      false,
      (runner, statements) =>
        this.pageIn(runner, statements, criteria, offset, limit, Number.MAX_SAFE_INTEGER),
      options,
    );
  }

  /** An item's value of `column` as the database compares it (timestamps as instants). */
  sortValueOf(item: TItem, column: string): string | null {
    if (column === 'id') return null;
    return String((item as unknown as Record<string, unknown>)[column]);
  }

  /**
   * A sort value from a cursor, as a statement parameter: a timestamp as the database's own text,
   * so that a step compares what was read, a date no calendar has (`2026-00-10`) too.
   */
  sortParameter(column: string, value: string | null): unknown {
    return value !== null && this.isTimestamp(column) ? sqlDatetimeText(value) : value;
  }

  /** The page's items in the listing's order, walking from whichever end is nearer. */
  private async pageIn(
    runner: QueryRunner,
    statements: StatementRunner,
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    total: number,
  ): Promise<TItem[]> {
    if (offset >= total) return [];
    const fromEnd = walksFromEnd(offset, limit, total);
    // A walk tried before the plan's sort: its page, where its stretch holds it (`trialWalk`).
    const trial = fromEnd ? undefined : trialWalk(criteria);
    if (trial) {
      const items = await this.pageIn(runner, statements, trial, offset, limit, total);
      if (items.length === limit) return items;
    }
    let statement = fromEnd ? undefined : this.straightPageStatement(criteria, offset, limit);
    if (!statement) {
      const end = Math.min(total, offset + limit);
      // Unfiltered in id order, the narrow id index is the cheapest walk; the optimizer prefers
      // the primary key, which holds whole rows.
      const idIndex =
        criteria.conditions.length === 0 && criteria.sortColumn === 'id'
          ? await this.narrowIdIndex(runner, statements)
          : undefined;
      const ids = this.walkStatement(
        criteria,
        't.id AS id',
        fromEnd ? 'from end' : 'forward',
        fromEnd ? { offset: total - end, limit: end - offset } : { offset, limit },
        idIndex,
      );
      statement = this.pageStatement(criteria, ids);
    }
    const rows = await statements.run<RawRow>(runner, statement);
    return rows.map((row) => this.toItem(row));
  }

  private async countIn(
    runner: QueryRunner,
    statements: StatementRunner,
    criteria: ListingCriteria,
    bucket?: SortBucket,
  ): Promise<ListingTotal> {
    let counted: ListingTotal;
    if (bucket) {
      const index =
        (bucket.column === criteria.sortColumn && criteria.bucketIndex) || criteria.countIndex;
      const ranged = this.rangedTimestamps(bucket, index);
      const rows = await statements.run<Record<string, unknown>>(
        runner,
        this.bucketStatement(criteria, bucket, index, ranged),
      );
      const buckets = rows.map((row): Bucket => [
        Number(row.bucket),
        Number(row.n),
        Number(row.first_id),
        Number(row.last_id),
        ...ranged.flatMap((_, i) => [Number(row[`first_${i}`]), Number(row[`last_${i}`])]),
      ]);
      counted = {
        total: buckets.reduce((sum, [, n]) => sum + n, 0),
        maxId: rows.reduce((max, row) => Math.max(max, Number(row.max_id)), 0),
        buckets,
      };
    } else {
      const [row] = await statements.run<{ total: unknown; max_id: unknown }>(
        runner,
        this.countStatement(criteria),
      );
      counted = { total: Number(row?.total ?? 0), maxId: Number(row?.max_id ?? 0) };
    }
    this.sawHighestId(counted.maxId);
    return counted;
  }

  /** The rows of one statement, read on the server that serves reads now. */
  private select<T>(statement: Statement, options: PageOptions): Promise<T[]> {
    return this.value(false, (runner, statements) => statements.run<T>(runner, statement), options);
  }

  /** What one read's work returns, on the server that serves reads now. */
  private async value<T>(snapshot: boolean, work: ReadWork<T>, options: PageOptions): Promise<T> {
    return (await this.statementRunners.read(snapshot, work, options)).value;
  }

  private async readRows(
    snapshot: boolean,
    work: ReadWork<TItem[]>,
    options: PageOptions,
  ): Promise<Rows<TItem>> {
    const { value: items, completeAsOf } = await this.statementRunners.read(
      snapshot,
      work,
      options,
    );
    return { items, completeAsOf };
  }

  private narrowIdIndexOnce?: Promise<string | undefined>;

  /**
   * An index on the table whose only column is `id` (MySQL/MariaDB), looked up once on the
   * request's own connection (asking the pool for another would wait forever with
   * DB_POOL_SIZE=1), bounded as its other statements are.
   */
  private narrowIdIndex(
    runner: QueryRunner,
    statements: StatementRunner,
  ): Promise<string | undefined> {
    if (!this.isMysql()) return Promise.resolve(undefined);
    if (!this.narrowIdIndexOnce) {
      const found = statements
        .run<{ name: string }>(runner, {
          sql: `SELECT INDEX_NAME AS name FROM information_schema.STATISTICS
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table AND INDEX_NAME <> 'PRIMARY'
             GROUP BY INDEX_NAME
            HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = 'id'`,
          params: { table: this.definition.table },
        })
        .then((rows) => rows[0]?.name);
      found.catch(() => (this.narrowIdIndexOnce = undefined));
      this.narrowIdIndexOnce = found;
    }
    return this.narrowIdIndexOnce;
  }

  private countStatement(criteria: ListingCriteria): Statement {
    const { where, params } = this.where(criteria);
    // Unfiltered, any index counts the rows: the optimizer takes the narrowest, not the sort's.
    const index = criteria.conditions.length ? criteria.countIndex : undefined;
    const union = index && this.union(criteria, index, 't.id');
    return {
      sql:
        `SELECT COUNT(*) AS total, ${this.highestId()} AS max_id FROM ` +
        (union ? `(${union}) t` : `${this.from(index)}${where}`),
      params,
    };
  }

  /** Rows per bucket of `column` through `index`, and the range of each of `ranged` in them. */
  private bucketStatement(
    criteria: ListingCriteria,
    { column, size }: SortBucket,
    index: string | undefined,
    ranged: readonly string[],
  ): Statement {
    const { where, params } = this.where(criteria);
    const bucket = this.bucketOf(column, size);
    const ranges = ranged.map((timestamp, i) => {
      const second = this.bucketOf(timestamp, 1);
      return `, MIN(${second}) AS first_${i}, MAX(${second}) AS last_${i}`;
    });
    return {
      sql: `SELECT ${bucket} AS bucket, COUNT(*) AS n, MIN(t.id) AS first_id, MAX(t.id) AS last_id${ranges.join('')}, ${this.highestId()} AS max_id FROM ${this.from(index)}${where} GROUP BY bucket ORDER BY bucket`,
      params,
    };
  }

  /**
   * The timestamps a histogram by `bucket` keeps the range of: the immutable ones, by `changedAt`,
   * where its index carries them all (else a walk bound goes without: reading each row for them
   * would make the histogram a scan of the table).
   */
  private rangedTimestamps({ column }: SortBucket, index: string | undefined): readonly string[] {
    const { changedAt, immutableTimestamps = [], indexes } = this.definition;
    if (column !== changedAt) return [];
    const path = index && indexes.find((candidate) => candidate.index === index);
    const carried = !path || immutableTimestamps.every((c) => path.covers?.includes(c));
    return carried ? immutableTimestamps : [];
  }

  /** `output` (the ids, or a straight read's columns) of one stretch of the table, in walk order. */
  private walkStatement(
    criteria: ListingCriteria,
    output: string,
    walk: 'forward' | 'from end',
    { offset, limit }: { offset: number; limit: number },
    forceIndex?: string,
  ): Statement {
    const direction = walk === 'forward' ? criteria.direction : reverse(criteria.direction);
    const bound = criteria.sorted ? undefined : criteria.walkBound;
    const { where, params } = this.where(criteria, bound);
    const from = `${this.from(forceIndex ?? criteria.index)}${where}`;
    // Parameters, not literals: every page of a walk then runs one and the same statement.
    const page = { ...params, page_limit: Number(limit), page_offset: Number(offset) };
    const order = ` ORDER BY ${orderBy('t', criteria, direction)} LIMIT :page_limit OFFSET :page_offset`;
    // What a union's branches or materialized matches select: enough to order them.
    const selected = `t.id${criteria.sortColumn === 'id' ? '' : `, ${columnSql(criteria.sortColumn)}`}`;
    if (criteria.sorted && this.isMysql()) {
      // A page near the start takes only its first rows of each alternative, in the page's order.
      const top = offset + limit <= TOP_SORT_ROWS ? { direction, rows: offset + limit } : undefined;
      const union = this.union(criteria, forceIndex ?? criteria.index, selected, top);
      // MariaDB's filesort looks each sorted row up again by its id, even when the index carries
      // what it selects: past the top rows (a priority queue, sorted in place) the matches are
      // materialized first (a LIMIT keeps them so).
      if (union || !top) {
        const matches = union ?? `SELECT ${selected} FROM ${from} LIMIT ${MATERIALIZED_ROWS}`;
        return { sql: `SELECT t.id AS id FROM (${matches}) t${order}`, params: page };
      }
    }
    if (bound && this.isMysql()) {
      // Each of the bound's alternatives walked on its own index to the page's end, then merged.
      const top = { direction, rows: offset + limit };
      const union = this.union(criteria, forceIndex ?? criteria.index, selected, top, bound);
      return { sql: `SELECT t.id AS id FROM (${union}) t${order}`, params: page };
    }
    return { sql: `SELECT ${output} FROM ${from}${order}`, params: page };
  }

  /**
   * A short walk along the primary key itself (from the start, or a keyset step), read straight,
   * without the deferred join, which would walk the id index and look each row up again.
   */
  private straightPageStatement(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
  ): Statement | undefined {
    const short =
      criteria.sortColumn === 'id' &&
      // From the walk's start (a keyset step, an export chunk) any length is read straight.
      (offset === 0 || offset + limit <= STRAIGHT_WALK_ROWS) &&
      criteria.conditions.every((condition) => condition.idRange);
    return short
      ? this.walkStatement(criteria, this.itemSql().straightOutput, 'forward', { offset, limit })
      : undefined;
  }

  /** The page's rows, with their lookups, for the ids `ids` selects, in the listing's order. */
  private pageStatement(criteria: ListingCriteria, ids: Statement): Statement {
    return {
      sql:
        `SELECT ${this.itemSql().output} FROM (${ids.sql}) p` +
        ` JOIN \`${this.definition.table}\` x ON x.id = p.id` +
        ` ORDER BY ${orderBy('x', criteria, criteria.direction)}`,
      params: ids.params,
    };
  }

  private itemSqlText?: { output: string; straightOutput: string };

  /** `itemQuery` as SQL, written once: `output` reads the table as `x`, `straightOutput` as `t`. */
  private itemSql(): { output: string; straightOutput: string } {
    if (!this.itemSqlText) {
      const { columns, timestamps = [], lookups = [] } = this.itemQuery;
      const outputOf = (alias: string) =>
        [
          ...columns.map((column) => `${columnSql(column, alias)} AS \`${column}\``),
          // CHAR: text on MySQL/MariaDB, TEXT affinity on SQLite.
          ...timestamps.map(
            (column) => `CAST(${columnSql(column, alias)} AS CHAR) AS \`${column}\``,
          ),
          ...lookups.map(
            ({ name, table, column, key }) =>
              `(SELECT ${columnSql(column, 'l')} FROM \`${table}\` l WHERE l.id = ${alias}.\`${key}\`) AS \`${name}\``,
          ),
        ].join(', ');
      this.itemSqlText = { output: outputOf('x'), straightOutput: outputOf('t') };
    }
    return this.itemSqlText;
  }

  /**
   * On MySQL/MariaDB, for a union path (`ix_a,ix_b`) and a condition with one alternative per
   * index (`q`): each alternative's matches read through its own index (which carries the other
   * filters, so no row is read), joined by UNION. Undefined for any other criteria.
   */
  private union(
    criteria: ListingCriteria,
    index: string | undefined,
    selected: string,
    top?: { direction: SortDirection; rows: number },
    /** A walk bound, whose alternatives name their indexes (none: `index`). */
    bound?: Condition,
  ): string | undefined {
    const names = bound
      ? bound.anyOf!.map((alternative) => alternative.index ?? index ?? PRIMARY_KEY)
      : (index?.split(',') ?? []);
    const split = bound ?? criteria.conditions.find((c) => c.anyOf?.length === names.length);
    if (!this.isMysql() || names.length < 2 || !split) return undefined;
    const others = allConditions(criteria)
      .filter((condition) => condition !== split)
      .map((condition) => ` AND (${condition.sql})`)
      .join('');
    // Of a prefix on two columns, one reads only its rows the other's does not hold (`shared`):
    // the one not sorted by, whose matches would be read whole and sorted.
    const alternatives = split.anyOf!;
    const narrowed = bound
      ? -1
      : alternatives.findIndex((a) => a.unshared && a.column !== criteria.sortColumn);
    const branches = alternatives.map((alternative, i) => {
      const { sql, index: name } =
        i === narrowed ? alternative.unshared! : { sql: alternative.sql, index: names[i] };
      return (
        `SELECT ${selected} FROM \`${this.definition.table}\` t FORCE INDEX (\`${name}\`)` +
        ` WHERE (${sql})${others}` +
        (top ? ` ORDER BY ${orderBy('t', criteria, top.direction)} LIMIT ${top.rows}` : '')
      );
    });
    return top ? `(${branches.join(') UNION (')})` : branches.join(' UNION ');
  }

  private where(
    criteria: ListingCriteria,
    bound?: Condition,
  ): { where: string; params: Record<string, unknown> } {
    const conditions = [...allConditions(criteria), ...(bound ? [bound] : [])];
    if (conditions.length === 0) return { where: '', params: {} };
    const params: Record<string, unknown> = {};
    const parts = conditions.map((condition) => {
      Object.assign(params, condition.params);
      return `(${this.sqlOf(condition)})`;
    });
    return { where: ` WHERE ${parts.join(' AND ')}`, params };
  }

  private sqlOf(condition: Condition): string {
    return (!this.isMysql() && condition.sqliteSql) || condition.sql;
  }

  /**
   * The table as `t`, read through `index` when one is named (several, comma-separated: the union
   * of their ranges). `PRIMARY_KEY`: along the primary key, so that another index's range on a
   * range of ids cannot outbid it.
   */
  private from(index: string | undefined): string {
    const table = `\`${this.definition.table}\` t`;
    if (!index) return table;
    if (index === PRIMARY_KEY) {
      return this.isMysql() ? `${table} FORCE INDEX (PRIMARY)` : `${table} NOT INDEXED`;
    }
    const names = index.split(',');
    const list = names.map((name) => `\`${name}\``).join(', ');
    if (this.isMysql() && names.length > 1) {
      // A union of their ranges, sorted: not a walk of one of them in its own order.
      return `${table} FORCE INDEX (${list}) IGNORE INDEX FOR ORDER BY (${list})`;
    }
    if (this.isMysql()) return `${table} FORCE INDEX (${list})`;
    // SQLite names one index at most: several (a union) are left to its OR optimization.
    return names.length > 1 ? table : `${table} INDEXED BY \`${index}\``;
  }

  /**
   * The table's highest id, in the count's own statement: the rows above it are the ones appended
   * since, a short range whatever the filters (above the last match, an old one, would not be).
   */
  private highestId(): string {
    return `(SELECT MAX(m.id) FROM \`${this.definition.table}\` m)`;
  }

  /** Whether the database compares text case-insensitively (MySQL's collations; SQLite: no). */
  isMysql(): boolean {
    return this.dataSource.options.type === 'mysql';
  }
}

/** `settledPart` of each cached total, worked out once: plans ask for the table's at every request. */
const settledParts = new WeakMap<ListingTotal, ListingTotal>();

/** The total less its `recent` rows, as of its settled id: what an advance counts on from. */
export function settledPart(counted: ListingTotal): ListingTotal {
  const { recent, ...rest } = counted;
  if (!recent) return counted;
  const known = settledParts.get(counted);
  if (known) return known;
  const settled: ListingTotal = {
    ...rest,
    total: counted.total - recent.total,
    maxId: recent.settledId,
  };
  if (counted.buckets) {
    const rows = new Map(recent.buckets?.map(([index, n]) => [index, n]));
    settled.buckets = counted.buckets
      .map(([index, n, ...ids]): Bucket => [index, n - (rows.get(index) ?? 0), ...ids])
      .filter(([, n]) => n > 0);
  }
  settledParts.set(counted, settled);
  return settled;
}

/** Whether a count's recent rows, from `from`, are all it counts (above `floor`, or every row). */
const recentIsAll = (from: number, floor?: number): boolean => from === (floor ?? 0);

/** How much longer than its staleness and the hold-back `settledOn` waits for a settled id. */
const SETTLING_WAIT_MS = 2000;

/** Seconds from 0001-01-01T00:00:00Z to 1970. */
const YEAR_ONE_SECONDS = 62_135_596_800;

/** A LIMIT no derived table reaches: it only keeps the optimizer from merging the table away. */
const MATERIALIZED_ROWS = '18446744073709551615';

/** The most rows a straight read walks: past it the deferred join is cheaper. */
const STRAIGHT_WALK_ROWS = 200;

/** `column, id` in `direction`; the column alone where it is unique (no ties to break). */
const orderBy = (
  alias: string,
  { sortColumn: column, uniqueSort }: ListingCriteria,
  direction: SortDirection,
): string =>
  column === 'id' || uniqueSort
    ? `${columnSql(column, alias)} ${direction}`
    : `${columnSql(column, alias)} ${direction}, ${alias}.id ${direction}`;

/** Whether the page is nearer the end than the start (never the first page: it reads forward). */
const walksFromEnd = (offset: number, limit: number, total: number): boolean =>
  offset >= limit && offset * 2 + limit > total;

const reverse = (direction: SortDirection): SortDirection => (direction === 'ASC' ? 'DESC' : 'ASC');

/** Every listing repository the app provides (each module's own). */
export const listingRepositories = (
  discovery: DiscoveryService,
): ListingRepository<{ id: number }>[] =>
  discovery
    .getProviders()
    .map((wrapper) => wrapper.instance as unknown)
    .filter(
      (instance): instance is ListingRepository<{ id: number }> =>
        instance instanceof ListingRepository,
    );
