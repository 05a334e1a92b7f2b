import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { ReadReplicas } from '../../database/read-replicas';
import type { Condition, ListingCriteria } from './listing-criteria';
import type { Bucket, ListingRepository, ListingTotal, PageOptions } from './listing.repository';

/** Ids a rollup's statement reads at once: a short stretch of the primary key. */
const CHUNK_IDS = 100_000;
const HOUR_MS = 3_600_000;
/** The most answers of each kind (rows per hour, hours matched) a rollup keeps between additions. */
const MAX_HOUR_ROWS = 32;

type AnyRepository = ListingRepository<{ id: number }>;

/**
 * One combination's hours, ascending, each with its rows, lowest and highest id: parallel typed
 * arrays: a quarter of the memory a Map of arrays took (a year of hours × every combination).
 */
export class HourCells {
  size = 0;
  /** Rows in every hour. */
  rows = 0;
  private hours = new Int32Array(8);
  private counts = new Float64Array(8);
  private firstIds = new Float64Array(8);
  private lastIds = new Float64Array(8);

  add(hour: number, rows: number, firstId: number, lastId: number): void {
    this.rows += rows;
    const i = this.position(hour);
    if (i < this.size && this.hours[i] === hour) {
      this.counts[i] += rows;
      this.firstIds[i] = Math.min(this.firstIds[i], firstId);
      this.lastIds[i] = Math.max(this.lastIds[i], lastId);
      return;
    }
    if (this.size === this.hours.length) this.resize(this.size * 2);
    if (i < this.size) {
      for (const array of [this.hours, this.counts, this.firstIds, this.lastIds]) {
        array.copyWithin(i + 1, i, this.size);
      }
    }
    this.hours[i] = hour;
    this.counts[i] = rows;
    this.firstIds[i] = firstId;
    this.lastIds[i] = lastId;
    this.size++;
  }

  /** Calls `visit` for each hour of `[first, end)`, ascending. */
  forEach(
    first: number,
    end: number,
    visit: (hour: number, rows: number, firstId: number, lastId: number) => void,
  ): void {
    for (let i = this.position(first); i < this.size && this.hours[i] < end; i++) {
      visit(this.hours[i], this.counts[i], this.firstIds[i], this.lastIds[i]);
    }
  }

  /** Gives back the room kept for growth, once a fill is done. */
  trim(): void {
    if (this.hours.length > this.size) this.resize(this.size);
  }

  /** The first position whose hour is `hour` or later; appends are the common case. */
  private position(hour: number): number {
    if (this.size === 0 || this.hours[this.size - 1] < hour) return this.size;
    let [low, high] = [0, this.size];
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.hours[middle] < hour) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private resize(length: number): void {
    const copy = <T extends Int32Array | Float64Array>(array: T, into: T): T => {
      into.set(array.subarray(0, this.size));
      return into;
    };
    this.hours = copy(this.hours, new Int32Array(length));
    this.counts = copy(this.counts, new Float64Array(length));
    this.firstIds = copy(this.firstIds, new Float64Array(length));
    this.lastIds = copy(this.lastIds, new Float64Array(length));
  }
}

/** Row counts per hour for each combination of a listing's few-valued columns. */
class Rollup {
  /** Combination (its values as JSON) → its values and its hours. */
  readonly combinations = new Map<string, { values: unknown[]; hours: HourCells }>();
  /** Every id up to this one is counted. */
  maxId = 0;
  builtAt = Date.now();
  advancedAt = Date.now();
  /** Sums asked for since the last rows were added: requests ask the same few again and again. */
  private readonly sums = new Map<string, number>();
  /** Rows per hour asked for since the last rows were added (deep pages), likewise. */
  private readonly hourRows = new Map<string, Float64Array>();
  /** The hours a window and keyset bound keep (each planner estimate asks again), likewise. */
  private readonly matched = new Map<string, MatchedHours | undefined>();
  /** `byHour`, worked out once per set of rows, with its rows in all. */
  private hourly?: { buckets: Bucket[]; total: number };
  /** `idRanges`, likewise (null: the hours' ids overlap). */
  private ranges?: Map<number, [number, number]> | null;

  add(values: unknown[], hour: number, rows: number, firstId: number, lastId: number): void {
    this.sums.clear();
    this.hourRows.clear();
    this.matched.clear();
    this.hourly = undefined;
    this.ranges = undefined;
    const key = JSON.stringify(values);
    let combination = this.combinations.get(key);
    if (!combination) {
      this.combinations.set(key, (combination = { values, hours: new HourCells() }));
    }
    combination.hours.add(hour, rows, firstId, lastId);
  }

  trim(): void {
    for (const { hours } of this.combinations.values()) hours.trim();
  }

  /** Every combination's rows per hour, ascending, with each hour's lowest and highest id. */
  byHour(): { buckets: Bucket[]; total: number } {
    if (!this.hourly) {
      const hours = new Map<number, Bucket>();
      let total = 0;
      for (const { hours: cells } of this.combinations.values()) {
        total += cells.rows;
        cells.forEach(-Infinity, Infinity, (hour, rows, first, last) => {
          const [, before = 0, low = first, high = last] = hours.get(hour) ?? [];
          hours.set(hour, [hour, before + rows, Math.min(low, first), Math.max(high, last)]);
        });
      }
      this.hourly = { buckets: [...hours.values()].sort(([a], [b]) => a - b), total };
    }
    return this.hourly;
  }

  /** Each hour's lowest and highest id, when each hour's ids all follow the previous hour's. */
  idRanges(): Map<number, [number, number]> | undefined {
    if (this.ranges === undefined) {
      const hours = this.byHour().buckets;
      const ordered = hours.every(([, , first], i) => i === 0 || hours[i - 1][3]! < first!);
      this.ranges = ordered
        ? new Map(hours.map(([hour, , first, last]) => [hour, [first!, last!]]))
        : null;
    }
    return this.ranges ?? undefined;
  }

  /**
   * The hours of a match's window that a keyset bound keeps whole, as runs, and those left to
   * count: the window's partial hours and the hours whose ids the bound cuts (undefined: too many).
   */
  hours({ window, ids }: Match): MatchedHours | undefined {
    const key = JSON.stringify([window.from, window.to, ids.from, ids.to]);
    if (this.matched.has(key)) return this.matched.get(key);
    const { first, end, edges } = wholeHours(window);
    const { from = -Infinity, to = Infinity } = ids;
    let hours: MatchedHours | undefined = { runs: [[first, end]], edges };
    if (from !== -Infinity || to !== Infinity) {
      const runs: [number, number][] = [];
      let run: [number, number] | undefined;
      let cut = 0;
      for (const [hour, , low, high] of this.byHour().buckets) {
        if (hour < first || hour >= end || high! < from || low! > to) {
          run = undefined;
        } else if (low! >= from && high! <= to) {
          if (run) run[1] = hour + 1;
          else runs.push((run = [hour, hour + 1]));
        } else {
          run = undefined;
          if (++cut > MAX_CUT_HOURS) break;
          edges.push([hour * HOUR_MS, (hour + 1) * HOUR_MS]);
        }
      }
      hours = cut > MAX_CUT_HOURS ? undefined : { runs, edges };
    }
    if (this.matched.size >= MAX_HOUR_ROWS) this.matched.clear();
    this.matched.set(key, hours);
    return hours;
  }

  /**
   * The rows of the combinations `match` keeps per hour of `[first, end)`, in hour order, as pairs
   * `hour, rows` in one typed array: a year of hours as arrays held megabytes of the heap per entry.
   */
  rowsPerHour(match: Match, first: number, end: number): Float64Array {
    const key = `${match.key}|${first}|${end}`;
    let pairs = this.hourRows.get(key);
    if (!pairs) {
      const hours = new Map<number, number>();
      for (const { values, hours: cells } of this.combinations.values()) {
        if (!match.values(values)) continue;
        cells.forEach(first, end, (hour, n) => hours.set(hour, (hours.get(hour) ?? 0) + n));
      }
      const sorted = [...hours.keys()].sort((a, b) => a - b);
      pairs = new Float64Array(sorted.length * 2);
      sorted.forEach((hour, i) => pairs!.set([hour, hours.get(hour)!], i * 2));
      // Each is up to a row per hour of the table: a flood of distinct windows keeps only a few.
      if (this.hourRows.size >= MAX_HOUR_ROWS) this.hourRows.clear();
      this.hourRows.set(key, pairs);
    }
    return pairs;
  }

  /** The rows of the combinations `match` keeps, in the hours `[first, end)`. */
  sum(match: Match, first: number, end: number): number {
    const key = `${match.key}|${first}|${end}`;
    let total = this.sums.get(key);
    if (total === undefined) {
      let sum = 0;
      const everyHour = first === -Infinity && end === Infinity;
      for (const { values, hours } of this.combinations.values()) {
        if (!match.values(values)) continue;
        if (everyHour) sum += hours.rows;
        else hours.forEach(first, end, (_hour, n) => (sum += n));
      }
      this.sums.set(key, (total = sum));
    }
    return total;
  }
}

/** What of a rollup a criteria keeps: combinations, by their values, a window of time and of ids. */
interface Match {
  key: string;
  values: (values: unknown[]) => boolean;
  window: { from?: number; to?: number };
  /** A keyset bound (`after_id`, `before_id`), inclusive. */
  ids: { from?: number; to?: number };
}

/** Hours a match sums whole (runs `[first, end)`), and `[from, to)` ms it leaves to count. */
interface MatchedHours {
  runs: [number, number][];
  edges: [number, number][];
}

/** The most values of an undeclared column the warm-up counts one by one. */
const MAX_FILTER_VALUES = 32;

/** The most hours an id bound may cut (ids out of time order) before a rollup leaves it to count. */
const MAX_CUT_HOURS = 8;

/** What a rollup answers: the rows of whole hours, and the partial hours left to count. */
export interface RolledTotal {
  total: number;
  maxId: number;
  /** `[from, to)` ms left to count (a window's partial hours, hours an id bound cuts): not in `total`. */
  edges: [number, number][];
  /** When the rollup began its full read: rows changed since are not in it. */
  builtAt: number;
}

/** A window's partial hour, `[from, to)` in ms, spanning `[start, end)` of the sorted column. */
interface RolledEdge {
  from: number;
  to: number;
  start: number;
  end: number;
}

/**
 * A rollup per listing that declares one: rows per hour of its time column for each combination
 * of its few-valued columns, built by the warm-up, advanced by the ids appended since once older
 * than the TTL, built again every COUNT_CACHE_FULL_RECOUNT_MS (rows deleted or committed late).
 */
@Injectable()
export class ListingRollups {
  private readonly logger = new Logger(ListingRollups.name);
  private readonly rollups = new Map<string, Rollup>();
  private readonly building = new Map<string, Promise<Rollup>>();
  private readonly advancing = new Map<string, Promise<void>>();
  private readonly options: PageOptions;
  private readonly ttlMs: number;
  private readonly rebuildMs: number;
  /** The app is closing: a build stopped with it is not news. */
  private stopped = false;
  /** Rebuilds the rollups that are due though nothing reads them (an idle instance's). */
  private rebuilding?: NodeJS.Timeout;
  private readonly scheduled = new Set<AnyRepository>();

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() private readonly readReplicas?: ReadReplicas,
  ) {
    this.ttlMs = config.countCacheTtlMs;
    this.rebuildMs = config.countCacheFullRecountMs;
    this.options = {
      statementTimeoutMs: config.countCacheRecountTimeoutMs,
      preparedStatements: config.database.preparedStatements > 0,
    };
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearInterval(this.rebuilding);
  }

  /**
   * Builds the listing's rollup unless it has one; resolves when it is there. From then on it is
   * built again once due, read or not: an instance asked again after a pause would otherwise answer
   * from one older than COUNT_CACHE_FULL_RECOUNT_MS.
   */
  async build(repository: AnyRepository): Promise<void> {
    if (!repository.definition.rollup || this.rollups.has(repository.definition.resource)) return;
    await this.rebuild(repository);
    this.rebuildWhenDue(repository);
  }

  private rebuildWhenDue(repository: AnyRepository): void {
    this.scheduled.add(repository);
    if (this.rebuilding || this.rebuildMs <= 0 || this.stopped) return;
    const check = () => {
      for (const scheduled of this.scheduled) {
        const rollup = this.rollups.get(scheduled.definition.resource);
        if (rollup && Date.now() - rollup.builtAt >= this.rebuildMs) {
          void this.rebuild(scheduled).catch(() => undefined); // logged by rebuild
        }
      }
    };
    // Looked at a twentieth of the period apart (at most 15 s): due that much late at worst.
    this.rebuilding = setInterval(check, Math.min(Math.max(this.rebuildMs / 20, 100), 15_000));
    this.rebuilding.unref();
  }

  /** The total of `criteria` from the rollup (advanced first when older than the TTL). */
  async total(
    repository: AnyRepository,
    criteria: ListingCriteria,
  ): Promise<RolledTotal | undefined> {
    const match = this.matcher(repository, criteria.conditions);
    if (!match) return undefined;
    const rollup = await this.current(repository);
    const hours = rollup?.hours(match);
    if (!rollup || !hours) return undefined;
    const total = hours.runs.reduce((sum, [first, end]) => sum + rollup.sum(match, first, end), 0);
    return { total, maxId: rollup.maxId, edges: hours.edges, builtAt: rollup.builtAt };
  }

  /**
   * Each value the built rollup holds of a column whose filter enumerates none (users' roles), as
   * that filter's query, when they are few: the warm-up counts them as it counts declared values.
   */
  filterValues(repository: AnyRepository): Record<string, unknown>[] {
    const { definition } = repository;
    const rollup = this.rollups.get(definition.resource);
    if (!rollup || !definition.rollup) return [];
    return definition.rollup.columns.flatMap((column, index) => {
      const [parameter] =
        Object.entries(definition.filters).find(
          ([, filter]) =>
            filter.operator === 'equals' && filter.column === column && !filter.values,
        ) ?? [];
      const values = new Set(
        [...rollup.combinations.values()]
          .map(({ values }) => values[index])
          .filter((v) => v !== null),
      );
      if (!parameter || values.size > MAX_FILTER_VALUES) return [];
      return [...values].map((value) => ({ [parameter]: value }));
    });
  }

  /** The orders the built rollup positions pages in: its time, and `id` where hours' ids follow. */
  spansOf(repository: AnyRepository): string[] {
    const rollup = this.rollups.get(repository.definition.resource);
    const time = repository.definition.rollup?.time;
    if (!rollup || !time) return [];
    return rollup.idRanges() ? [time, 'id'] : [time];
  }

  /** Whether the listing's rollup is built (by the warm-up) and splits by the criteria's kind. */
  answers(repository: AnyRepository, criteria: ListingCriteria): boolean {
    const rollup = this.rollups.get(repository.definition.resource);
    const match = rollup && this.matcher(repository, criteria.conditions);
    return !!match && rollup.hours(match) !== undefined;
  }

  /**
   * The listing's rows per hour of `column` with their ids, where its rollup is by that column
   * (the rollup as it is): a time window's implied id bounds, without a histogram of the table.
   */
  hourly(
    repository: AnyRepository,
    column: string,
  ): (ListingTotal & { buckets: Bucket[] }) | undefined {
    const rollup = this.rollups.get(repository.definition.resource);
    if (!rollup || repository.definition.rollup?.time !== column) return undefined;
    return { ...rollup.byHour(), maxId: rollup.maxId };
  }

  /** An estimate of `conditions`' rows from the rollup as it is (partial hours taken whole). */
  estimate(repository: AnyRepository, conditions: Condition[]): number | undefined {
    const rollup = this.rollups.get(repository.definition.resource);
    const match = rollup && this.matcher(repository, conditions);
    const hours = match && rollup.hours(match);
    if (!hours) return undefined;
    // The hours left to count are taken whole.
    const whole = hours.edges.map(([from, to]) => [
      Math.floor(from / HOUR_MS),
      Math.ceil(to / HOUR_MS),
    ]);
    return [...hours.runs, ...whole].reduce((sum, [a, b]) => sum + rollup.sum(match, a, b), 0);
  }

  /**
   * The criteria's rows per hour as `[rows, start, end)` spans of `column` (its time in seconds,
   * or `id` where no two hours' ids interleave), to position deep pages by; a window's partial
   * hours (`edges`, `[from, to)` in ms) are left to count.
   */
  spans(
    repository: AnyRepository,
    criteria: ListingCriteria,
    column: string,
  ):
    | { spans: [number, number, number][]; edges: RolledEdge[]; maxId: number; builtAt: number }
    | undefined {
    const rollup = this.rollups.get(repository.definition.resource);
    const match = rollup && this.matcher(repository, criteria.conditions);
    const hours = match && rollup.hours(match);
    if (!hours) return undefined;
    const time = column === repository.definition.rollup!.time;
    const ranges = time ? undefined : column === 'id' ? rollup.idRanges() : undefined;
    if (!time && !ranges) return undefined;
    // A partial hour's rows lie within its hour's span: its seconds, or its ids (which no other
    // hour's ids interleave). An hour without ids has no row up to the rollup's highest id.
    const edges: RolledEdge[] = [];
    for (const [from, to] of hours.edges) {
      const hour = Math.floor(from / HOUR_MS);
      const range = ranges?.get(hour);
      if (time) edges.push({ from, to, start: from / 1000, end: to / 1000 });
      else if (range) edges.push({ from, to, start: range[0], end: range[1] + 1 });
    }
    const spans: [number, number, number][] = [];
    for (const [first, end] of hours.runs) {
      const pairs = rollup.rowsPerHour(match, first, end);
      for (let i = 0; i < pairs.length; i += 2) {
        const [hour, rows] = [pairs[i], pairs[i + 1]];
        const [low, high] = time ? [hour * 3600, (hour + 1) * 3600 - 1] : ranges!.get(hour)!;
        spans.push([rows, low, high + 1]);
      }
    }
    return { spans, edges, maxId: rollup.maxId, builtAt: rollup.builtAt };
  }

  /** The rollup, advanced when older than the TTL; undefined when there is none. */
  private async current(repository: AnyRepository): Promise<Rollup | undefined> {
    const { resource } = repository.definition;
    const rollup = this.rollups.get(resource);
    if (!rollup) return undefined;
    const now = Date.now();
    // Served as it is meanwhile, to recounts too: a rebuild reads the whole table (minutes at 50M
    // rows), and a request whose total has expired waits for its recount.
    if (now - rollup.builtAt >= this.rebuildMs)
      void this.rebuild(repository).catch(() => undefined);
    if (now - rollup.advancedAt >= this.ttlMs) {
      let advancing = this.advancing.get(resource);
      if (!advancing) {
        advancing = this.fill(repository, rollup).finally(() => this.advancing.delete(resource));
        this.advancing.set(resource, advancing);
      }
      await advancing;
    }
    return rollup;
  }

  private rebuild(repository: AnyRepository): Promise<Rollup> {
    const { resource } = repository.definition;
    let building = this.building.get(resource);
    if (!building) {
      const started = Date.now();
      const rollup = new Rollup();
      building = this.fill(repository, rollup, true)
        .then(() => {
          this.rollups.set(resource, rollup);
          this.logger.log(
            `${resource}: rolled up ${rollup.maxId} ids in ${((Date.now() - started) / 1000).toFixed(1)} s`,
          );
          return rollup;
        })
        .catch((error: Error) => {
          if (!this.stopped) {
            this.logger.warn(`${resource}: building the rollup failed: ${error.message}`);
          }
          throw error;
        })
        .finally(() => this.building.delete(resource));
      this.building.set(resource, building);
    }
    return building;
  }

  /**
   * Adds the rows above the rollup's highest id, a stretch of the primary key at a time, all read
   * on the server that read the highest id: a replica less far along would miss rows for good.
   */
  private async fill(repository: AnyRepository, rollup: Rollup, building = false): Promise<void> {
    const { columns, time } = repository.definition.rollup!;
    const source = this.readReplicas?.source();
    const options = { ...this.options, source };
    // Up to the id settled as of what the source holds (a row may still be committed late above
    // it, or not have reached a replica): totals count the rest. Only a build waits for one to
    // settle: a request may be waiting for an advance.
    const settled = await repository.settledOn(source, building);
    const now = await repository.highestIdNow(options);
    const highest = Math.min(now, settled ?? (building ? now : rollup.maxId));
    for (let above = rollup.maxId; above < highest; above = rollup.maxId) {
      const upTo = Math.min(highest, above + CHUNK_IDS);
      const groups = await repository.countByGroup(columns, time, above, upTo, options);
      if (groups.length === 0 && upTo < highest) {
        // A gap in the ids: on from the next id there is, not a chunk at a time (ids may jump by 2^50).
        const next = await repository.lowestIdAbove(upTo, highest, options);
        rollup.maxId = next === undefined ? highest : next - 1;
        continue;
      }
      for (const group of groups) {
        rollup.add(
          columns.map((column) => group[column] ?? null),
          Number(group.bucket),
          Number(group.n),
          Number(group.first_id),
          Number(group.last_id),
        );
      }
      rollup.maxId = upTo;
    }
    rollup.trim();
    rollup.advancedAt = Date.now();
  }

  /** What the conditions keep, unless one is not an equality on a column or a range of time. */
  private matcher(repository: AnyRepository, conditions: Condition[]): Match | undefined {
    const { rollup } = repository.definition;
    if (!rollup) return undefined;
    const wanted = new Map<number, unknown>();
    const window: { from?: number; to?: number } = {};
    const ids: { from?: number; to?: number } = {};
    for (const condition of conditions) {
      const { binds, between, params } = condition;
      if (condition.keyset && between) {
        if (between.from !== undefined) ids.from = Math.max(ids.from ?? -Infinity, between.from);
        if (between.to !== undefined) ids.to = Math.min(ids.to ?? Infinity, between.to);
        continue;
      }
      if (!binds || condition.idRange) return undefined;
      if (binds.range) {
        if (binds.column !== rollup.time || !between) return undefined;
        if (between.from !== undefined)
          window.from = Math.max(window.from ?? -Infinity, between.from);
        // `between.to` is inclusive (the last ms); the window's end is exclusive.
        if (between.to !== undefined) window.to = Math.min(window.to ?? Infinity, between.to + 1);
        continue;
      }
      const index = rollup.columns.indexOf(binds.column);
      if (index < 0) return undefined;
      wanted.set(index, Object.values(params)[0]);
    }
    const same = repository.isMysql() ? sameCaseInsensitive : sameNocase;
    return {
      key: JSON.stringify([...wanted].sort(([a], [b]) => a - b)),
      window,
      ids,
      values: (values: unknown[]) =>
        [...wanted].every(([index, value]) => same(values[index], value)),
    };
  }
}

/** A window's whole hours `[first, end)`, and its partial ones at the edges as `[from, to)` ms. */
function wholeHours({ from = -Infinity, to = Infinity }: { from?: number; to?: number }): {
  first: number;
  end: number;
  edges: [number, number][];
} {
  const first = Math.ceil(from / HOUR_MS);
  const end = Math.floor(to / HOUR_MS);
  const edges: [number, number][] = [];
  if (first > end) edges.push([from, to]);
  else {
    if (Number.isFinite(from) && from < first * HOUR_MS) edges.push([from, first * HOUR_MS]);
    if (Number.isFinite(to) && end * HOUR_MS < to) edges.push([end * HOUR_MS, to]);
  }
  return { first, end, edges };
}

const normalize = (value: unknown): unknown =>
  typeof value === 'boolean' ? (value ? 1 : 0) : typeof value === 'bigint' ? Number(value) : value;

function sameExactly(stored: unknown, wanted: unknown): boolean {
  const [a, b] = [normalize(stored), normalize(wanted)];
  return typeof a === 'number' || typeof b === 'number' ? Number(a) === Number(b) : a === b;
}

/** Text compared as `fold` leaves it (a collation), other values exactly. */
const sameAs =
  (fold: (text: string) => string) =>
  (stored: unknown, wanted: unknown): boolean => {
    const [a, b] = [normalize(stored), normalize(wanted)];
    if (typeof a !== 'string' || typeof b !== 'string') return sameExactly(a, b);
    return fold(a) === fold(b);
  };

/** MySQL's `_ci` collations: case and trailing spaces aside (the GROUP BY merged such values too). */
const sameCaseInsensitive = sameAs((text) => text.trimEnd().toLowerCase());

/** SQLite's NOCASE, which a listing's text filter columns have there: ASCII letters in any case. */
const sameNocase = sameAs((text) => text.replace(/[A-Z]/g, (letter) => letter.toLowerCase()));
