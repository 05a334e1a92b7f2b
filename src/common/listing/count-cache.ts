import { hash } from 'node:crypto';
import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnModuleDestroy,
  Optional,
} from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import {
  AbandonedRequestError,
  SharedWork,
  untilAbandoned,
} from '../../database/abandoned-requests';
import { SHARED_TOTALS, SharedTotalsStore } from './shared-totals';
import type { ListingTotal } from './listing.repository';

interface Entry {
  value: ListingTotal;
  expiresAt: number;
  /** When its refresh-ahead window opens. */
  refreshFrom: number;
  /** Its recount ahead of expiry: one attempt per entry; while it runs, served past its time. */
  recount: 'not started' | 'running' | 'ended';
}

/** Counts a total: afresh, or by advancing `previous` (the one it replaces) by the rows since. */
export type TotalCounter = (previous?: ListingTotal) => Promise<ListingTotal>;

/** How long one instance may hold the right to count a key before others count it themselves. */
const LOCK_MS = 5_000;
const POLL_MS = 25;
/**
 * The refresh-ahead window: the second half of a total's time, or twice its count's duration if
 * longer, so that under steady traffic the fresh total is there before the old one expires.
 */
const REFRESH_AHEAD_SHARE = 0.5;
const REFRESH_AHEAD_COUNT_TIMES = 2;

/**
 * Listing totals per criteria key for COUNT_CACHE_TTL_MS (the rows of a page are never cached),
 * one count per key at a time, recounted ahead of expiry in the background and shared between
 * instances through Redis when configured (docs/architecture.md, Count cache).
 */
@Injectable()
export class CountCache implements OnModuleDestroy, BeforeApplicationShutdown {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, { total: Promise<ListingTotal>; work: SharedWork }>();
  private readonly ttlMs: number;
  private readonly refreshAheadMs: number;
  private readonly recountTimeoutMs: number;
  private readonly fullRecountMs: number;
  private readonly shared?: SharedTotalsStore;
  /** Per database, so that services on different databases can share one Redis. */
  private readonly keyPrefix: string;
  private readonly logger = new Logger(CountCache.name);
  private sharedFailureLoggedAt = -Infinity;
  private static readonly MAX_ENTRIES = 10_000;
  /**
   * The most buckets and marks held in all (about 90 bytes of heap each): histograms of many
   * criteria (a deep page's each) outgrew the 128 MiB heap at 50M rows before the entry count
   * bound them.
   */
  private static readonly MAX_CELLS = 400_000;
  private cells = 0;
  private static readonly MAX_WARMING = 2;
  private warming = 0;
  /** The app is shutting down: a background count failing as the pool closes is not news. */
  private stopped = false;
  /** The shared store's count locks this instance holds: given up at shutdown. */
  private readonly locksHeld = new Set<string>();

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() @Inject(SHARED_TOTALS) shared?: SharedTotalsStore | null,
  ) {
    this.ttlMs = config.countCacheTtlMs;
    this.refreshAheadMs = Math.round(this.ttlMs * REFRESH_AHEAD_SHARE);
    this.recountTimeoutMs = config.countCacheRecountTimeoutMs;
    this.fullRecountMs = config.countCacheFullRecountMs;
    const database = config.database.url ?? config.database.sqlitePath;
    this.keyPrefix = `${config.redisKeyPrefix}count:${hash('sha256', database, 'base64url').slice(0, 12)}:`;
    if (this.ttlMs > 0 && shared) this.shared = shared;
  }

  onModuleDestroy(): void {
    this.stopped = true;
  }

  /**
   * Gives up the locks of counts still running (stopped with the app): other instances would
   * otherwise wait out LOCK_MS for a total this one will not publish.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const held = [...this.locksHeld];
    this.locksHeld.clear();
    await Promise.all(held.map((lockKey) => this.shared?.unlock(lockKey).catch(() => undefined)));
  }

  /** The total of `key`: cached, or counted by `compute`; a refresh ahead runs `recount`. */
  async get(
    key: string,
    compute: TotalCounter,
    recount: TotalCounter = compute,
  ): Promise<ListingTotal> {
    const now = Date.now();
    const cached = this.read(key);
    if (cached && cached.expiresAt > now) {
      if (
        now >= cached.refreshFrom &&
        cached.recount === 'not started' &&
        !this.inFlight.has(key)
      ) {
        this.refreshAhead(key, cached, recount);
      }
      return cached.value;
    }
    // While its recount runs, an expired total is served, at most the recount's limit past it.
    if (cached?.recount === 'running' && now < cached.expiresAt + this.recountTimeoutMs) {
      return cached.value;
    }

    // A request stops waiting when it is stopped; the count goes on while others wait for it. One
    // being stopped (every request waiting for it left) would fail this one too: counted anew.
    const running = this.inFlight.get(key);
    if (running && !running.work.stopped) {
      running.work.join();
      return untilAbandoned(running.total);
    }
    // An expired total is only advanced: the full recount it is due starts behind it, or requests
    // never inside the refresh-ahead window (one every TTL or slower) would never take it.
    const counting = this.run(key, compute, 0, false, (value) =>
      this.recountIfDue(key, value, recount),
    );
    return untilAbandoned(counting);
  }

  /** Starts `recount` in the background when `value` was last counted in full long enough ago. */
  private recountIfDue(key: string, value: ListingTotal, recount: TotalCounter): void {
    const entry = this.entries.get(key);
    if (
      entry?.value === value &&
      this.fullCountOutdated(value) &&
      entry.recount === 'not started' &&
      !this.inFlight.has(key) &&
      !this.stopped
    ) {
      this.refreshAhead(key, entry, recount);
    }
  }

  /** Whether `total` was counted in full, and that was COUNT_CACHE_FULL_RECOUNT_MS ago. */
  private fullCountOutdated(total: ListingTotal): boolean {
    return total.countedAt !== undefined && this.fullRecountDue(total);
  }

  /** Holds `value` as the total of `key` here for its time, in place of the one held. */
  set(key: string, value: ListingTotal): void {
    if (this.ttlMs > 0) this.remember(key, value, this.ttlMs);
  }

  /** Whether `total` was last counted in full (deleted rows too) COUNT_CACHE_FULL_RECOUNT_MS ago. */
  fullRecountDue(total: ListingTotal): boolean {
    return total.countedAt === undefined || Date.now() - total.countedAt >= this.fullRecountMs;
  }

  /** The total of `key` held here, even an expired one, without counting: for estimates. */
  peek(key: string): ListingTotal | undefined {
    return this.read(key)?.value;
  }

  /** Whether `key` is being counted now (a request asking for it would wait for that count). */
  counting(key: string): boolean {
    return this.inFlight.has(key);
  }

  /**
   * The entry of `key`, moved to the end: the full cache drops the least recently read first (not
   * the first counted, such as the tables' histograms every plan reads).
   */
  private read(key: string) {
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  /**
   * Whether `key` has a total here (even an expired one); otherwise starts `counter` in the
   * background for later requests: a request does not wait for a first count far longer than its page.
   */
  warm(key: string, counter: TotalCounter): boolean {
    if (this.entries.has(key)) return true;
    if (this.inFlight.has(key)) return false;
    // Each is a full scan of its criteria: a flood of distinct deep pages starts only a few.
    if (this.warming >= CountCache.MAX_WARMING) return false;
    this.warming++;
    // Stopped, like a count, only if every request waiting for it leaves before it ends.
    this.run(key, counter, 0)
      .catch((error: Error) => {
        if (error instanceof AbandonedRequestError || this.stopped) return;
        this.logger.warn(`Counting a listing histogram in the background failed: ${error.message}`);
      })
      .finally(() => this.warming--);
    return false;
  }

  /**
   * Counts `key` once at a time; callers that arrive meanwhile share the result. `onAdvanced` sees
   * a total counted here by advancing an earlier one.
   */
  private run(
    key: string,
    counter: TotalCounter,
    freshForMs: number,
    background = false,
    onAdvanced?: (value: ListingTotal) => void,
  ): Promise<ListingTotal> {
    // The total this one replaces (expired, or about to), which the counter may advance: this
    // instance's, or the last one published if that was counted in full later.
    const previous = this.entries.get(key)?.value;
    let advanced = false;
    const work = new SharedWork(background);
    work.join();
    const compute: Compute = (published) => {
      const base = newerBase(previous, published);
      advanced = base !== undefined;
      return work.run(() => counter(base));
    };
    const total = (
      this.shared
        ? this.countShared(key, compute, freshForMs, background)
        : this.counted(key, compute)
    ).finally(() => {
      if (this.inFlight.get(key)?.work === work) this.inFlight.delete(key);
    });
    this.inFlight.set(key, { total, work });
    if (onAdvanced) {
      total.then(
        (value) => advanced && onAdvanced(value),
        () => undefined,
      );
    }
    return total;
  }

  private refreshAhead(key: string, entry: Entry, recount: TotalCounter): void {
    entry.recount = 'running';
    // A total another instance published counts as new only with more than the window left.
    this.run(key, recount, entry.expiresAt - entry.refreshFrom, true)
      .catch((error: Error) => {
        // The cached total stays until its time; after that requests count (and see the error).
        if (this.stopped) return;
        this.logger.warn(`Recounting a listing total ahead of its expiry failed: ${error.message}`);
      })
      .finally(() => (entry.recount = 'ended'));
  }

  private async counted(
    key: string,
    compute: Compute,
    published?: ListingTotal,
  ): Promise<ListingTotal> {
    const started = Date.now();
    const value = await compute(published);
    if (this.ttlMs > 0) this.remember(key, value, this.ttlMs, Date.now() - started);
    return value;
  }

  /**
   * Counts `key` here if no other instance is (the shared store's lock), publishing the result;
   * otherwise waits for theirs. Any failure of the store falls back to counting here.
   */
  private async countShared(
    key: string,
    compute: Compute,
    freshForMs: number,
    background: boolean,
  ): Promise<ListingTotal> {
    const store = this.shared!;
    const sharedKey = `${this.keyPrefix}${hash('sha256', key, 'base64url')}`;
    const lockKey = `${sharedKey}:lock`;
    // A recount takes no total due its own full recount: the one it replaces was just published.
    const usable = (total: ListingTotal) => !background || !this.fullCountOutdated(total);
    const readShared = () => this.readShared(store, key, sharedKey, freshForMs, usable);
    let locked: boolean;
    let base: ListingTotal | undefined;
    try {
      const found = await readShared();
      if (found !== undefined) return found;
      locked = await store.lock(lockKey, LOCK_MS);
      // Another instance is counting this key: wait for its result, within the lock's time, or
      // count here once it gives the lock up without one (its requests left).
      const deadline = Date.now() + LOCK_MS;
      while (!locked && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        const published = await readShared();
        if (published !== undefined) return published;
        locked = await store.lock(lockKey, LOCK_MS);
      }
      if (locked) {
        this.locksHeld.add(lockKey);
        // The total may have been published between the last look and taking the lock.
        const published = await readShared();
        if (published !== undefined) {
          await store.unlock(lockKey);
          this.locksHeld.delete(lockKey);
          return published;
        }
        base = await store.readBase(sharedKey);
      }
    } catch (error) {
      this.locksHeld.delete(lockKey); // it runs out by itself; the count goes on here, unshared
      this.sharedFailed(error as Error);
      return this.counted(key, compute);
    }
    // A failed count is the request's error, not the store's: it is not run a second time.
    if (!locked) return this.counted(key, compute); // the other instance did not publish in time
    try {
      const value = await this.counted(key, compute, base);
      await store
        .publish(sharedKey, value, this.ttlMs, this.ttlMs + this.fullRecountMs, lockKey)
        .catch((error: Error) => this.sharedFailed(error));
      return value;
    } catch (error) {
      await store.unlock(lockKey).catch(() => undefined);
      throw error;
    } finally {
      this.locksHeld.delete(lockKey);
    }
  }

  /** A total another instance (or this one) published, remembered here for its remaining time. */
  private async readShared(
    store: SharedTotalsStore,
    key: string,
    sharedKey: string,
    freshForMs: number,
    usable: (total: ListingTotal) => boolean,
  ): Promise<ListingTotal | undefined> {
    const published = await store.read(sharedKey);
    if (!published || published.remainingMs <= freshForMs || !usable(published.total)) {
      return undefined;
    }
    this.remember(key, published.total, Math.min(published.remainingMs, this.ttlMs));
    return published.total;
  }

  private sharedFailed(error: Error): void {
    // Every request that would have shared a total fails alike: one line every half minute.
    const now = Date.now();
    if (this.stopped || now - this.sharedFailureLoggedAt < 30_000) return;
    this.sharedFailureLoggedAt = now;
    this.logger.warn(`Shared totals unavailable, counting locally: ${error.message}`);
  }

  /** `countMs`: how long the count took (unknown for a total another instance published). */
  private remember(key: string, value: ListingTotal, ttlMs: number, countMs = 0): void {
    const replaced = this.entries.get(key);
    if (replaced) this.cells -= cellsOf(replaced.value);
    this.entries.delete(key);
    const cells = cellsOf(value);
    // The least recently read go first, until the new total fits.
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size < CountCache.MAX_ENTRIES && this.cells + cells <= CountCache.MAX_CELLS)
        break;
      this.entries.delete(oldest);
      this.cells -= cellsOf(entry.value);
    }
    this.cells += cells;
    const expiresAt = Date.now() + ttlMs;
    const windowMs = Math.min(
      this.ttlMs,
      Math.max(this.refreshAheadMs, REFRESH_AHEAD_COUNT_TIMES * countMs),
    );
    this.entries.set(key, {
      value,
      expiresAt,
      refreshFrom: expiresAt - windowMs,
      recount: 'not started',
    });
  }
}

/** Counts a total, advancing the last one published (`published`) where it is the newer base. */
type Compute = (published?: ListingTotal) => Promise<ListingTotal>;

/**
 * Of two totals of one key, the one to advance: the later full count (an instance's own copy may
 * predate another's recount, which took in deleted rows), else the one advanced furthest.
 */
function newerBase(own?: ListingTotal, published?: ListingTotal): ListingTotal | undefined {
  if (!own || !published) return own ?? published;
  const [ownCount, publishedCount] = [own.countedAt ?? -1, published.countedAt ?? -1];
  if (ownCount !== publishedCount) return publishedCount > ownCount ? published : own;
  return published.maxId > own.maxId ? published : own;
}

/** What a total holds: itself, and its histogram's buckets or its marks. */
const cellsOf = ({ buckets, marks, recent }: ListingTotal): number =>
  1 + (buckets?.length ?? 0) + (marks?.length ?? 0) + (recent?.buckets?.length ?? 0);
