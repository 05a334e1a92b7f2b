import { hash } from 'node:crypto';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { AbandonedRequestError, SharedWork } from '../../database/abandoned-requests';
import { SHARED_TOTALS, SharedTotalsStore } from './shared-totals';
import type { Bucket, ListingTotal } from './listing.repository';

interface Entry {
  value: ListingTotal;
  expiresAt: number;
  /** When its refresh-ahead window opens. */
  refreshFrom: number;
  /**
   * Its recount ahead of expiry: one attempt per entry, whatever comes of it. While it is
   * running, the total is served past its time too.
   */
  recount: 'not started' | 'running' | 'ended';
}

/**
 * Counts a total: afresh, or by advancing `previous` (the total it replaces, when there is one)
 * with the rows appended since.
 */
export type TotalCounter = (previous?: ListingTotal) => Promise<ListingTotal>;

/** How long one instance may hold the right to count a key before others count it themselves. */
const LOCK_MS = 5_000;
const POLL_MS = 25;
/**
 * The second half of a total's time, or longer when its count took long: a request that reads it
 * then is answered from the cache at once and starts the recount in the background, so that under
 * steady traffic the fresh total is there before the old one expires and no request waits for a
 * count. A full count of 5M login activities takes 0.3 s alone, but 2.4 s was seen under the
 * bench's load, past a window of the last fifth (2 s): every request then waited for it.
 */
const REFRESH_AHEAD_SHARE = 0.5;
/** The window is at least this many times as long as the count that gave the total took. */
const REFRESH_AHEAD_COUNT_TIMES = 2;

/**
 * Caches listing totals for a short time so that `page_count` does not cost a full COUNT per
 * request. The rows of a page are never cached; only the total may be up to the TTL old.
 *
 * - One count runs per key at a time in this process: concurrent requests for the same key share
 *   it, also with the TTL at 0 (they then share a count that started after they arrived).
 * - A total read in the second half of its time (or from twice its count's duration before its
 *   expiry, if longer) is recounted in the background (refresh ahead); the request is answered
 *   with the cached total. That recount runs under its own, longer time limit
 *   (COUNT_CACHE_RECOUNT_TIMEOUT_MS), and while it runs the total it replaces is served past its
 *   time if need be, never more than that limit past it: under load on a slow machine, a full
 *   count of 5M rows outlived both the window and the requests' 5 s statement limit, and every
 *   request then waited for a count that was cut off (503). Once the recount has ended (or failed),
 *   an expired total is not served: requests wait for the count as on a miss.
 * - With REDIS_URL, totals are shared between instances: a miss first looks in Redis; the
 *   instance that takes a short lock (SET NX PX) counts and publishes, the others wait for its
 *   result (at most the lock's time) instead of counting too. Any Redis failure falls back to
 *   counting here: Redis makes totals cheaper, never wrong or unavailable.
 */
@Injectable()
export class CountCache {
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
  private static readonly MAX_WARMING = 2;
  private warming = 0;

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

  /**
   * The total of `key`: cached, or counted by `compute`. `recount` is what a refresh ahead runs
   * (no request waits for it, so it need not read a page alongside); by default `compute`.
   */
  async get(
    key: string,
    compute: TotalCounter,
    recount: TotalCounter = compute,
  ): Promise<ListingTotal> {
    const now = Date.now();
    const cached = this.entries.get(key);
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
    if (cached?.recount === 'running' && now < cached.expiresAt + this.recountTimeoutMs) {
      return cached.value;
    }

    const running = this.inFlight.get(key);
    if (running) {
      running.work.join();
      return running.total;
    }
    return this.run(key, compute, 0);
  }

  /**
   * Whether `total` was counted in full (rather than advanced) more than
   * COUNT_CACHE_FULL_RECOUNT_MS ago: its next background recount counts in full, deleted rows too.
   */
  fullRecountDue(total: ListingTotal): boolean {
    return total.countedAt === undefined || Date.now() - total.countedAt >= this.fullRecountMs;
  }

  /** The total of `key` held here, even an expired one, without counting: for estimates. */
  peek(key: string): ListingTotal | undefined {
    return this.entries.get(key)?.value;
  }

  /**
   * Whether `key` has a total here (even an expired one, which the next `get` advances);
   * otherwise starts `counter` in the background unless it runs already, for later requests, and
   * says no: a request does not wait for a first count that may take far longer than its page.
   */
  warm(key: string, counter: TotalCounter): boolean {
    if (this.entries.has(key)) return true;
    if (this.inFlight.has(key)) return false;
    // Each is a full scan of its criteria: a flood of distinct deep pages starts only a few.
    if (this.warming >= CountCache.MAX_WARMING) return false;
    this.warming++;
    // Shared with the request that starts it and those that then wait for it (`get`): stopped if
    // all of them leave before it ends, like a count; a request that got its reply keeps it going.
    this.run(key, counter, 0)
      .catch((error: Error) => {
        if (error instanceof AbandonedRequestError) return;
        this.logger.warn(`Counting a listing histogram in the background failed: ${error.message}`);
      })
      .finally(() => this.warming--);
    return false;
  }

  /**
   * Counts `key` once at a time; callers that arrive meanwhile share the result. The count is
   * stopped only when every request waiting for it has left (a refresh ahead, which no request
   * waits for, never is).
   */
  private run(
    key: string,
    counter: TotalCounter,
    freshForMs: number,
    background = false,
  ): Promise<ListingTotal> {
    // The total this one replaces (expired, or about to), which the counter may advance.
    const previous = this.entries.get(key)?.value;
    const work = new SharedWork(background);
    work.join();
    const compute = () => work.run(() => counter(previous));
    const total = (
      this.shared ? this.countShared(key, compute, freshForMs) : this.counted(key, compute)
    ).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, { total, work });
    return total;
  }

  private refreshAhead(key: string, entry: Entry, recount: TotalCounter): void {
    entry.recount = 'running';
    // A total another instance published counts as new only with more than the window left.
    this.run(key, recount, entry.expiresAt - entry.refreshFrom, true)
      .catch((error: Error) => {
        // The cached total stays until its time; after that requests count (and see the error).
        this.logger.warn(`Recounting a listing total ahead of its expiry failed: ${error.message}`);
      })
      .finally(() => (entry.recount = 'ended'));
  }

  private async counted(key: string, compute: () => Promise<ListingTotal>): Promise<ListingTotal> {
    const started = Date.now();
    const value = await compute();
    if (this.ttlMs > 0) this.remember(key, value, this.ttlMs, Date.now() - started);
    return value;
  }

  /**
   * Counts `key` here if no other instance is (the shared store's lock), publishing the result;
   * otherwise waits for theirs. `freshForMs`: a published total is taken only with more time left.
   */
  private async countShared(
    key: string,
    compute: () => Promise<ListingTotal>,
    freshForMs: number,
  ): Promise<ListingTotal> {
    const store = this.shared!;
    const sharedKey = `${this.keyPrefix}${hash('sha256', key, 'base64url')}`;
    const lockKey = `${sharedKey}:lock`;
    let locked: boolean;
    try {
      const found = await this.readShared(store, key, sharedKey, freshForMs);
      if (found !== undefined) return found;
      locked = await store.lock(lockKey, LOCK_MS);
      if (locked) {
        // The total may have been published between the first look and taking the lock.
        const published = await this.readShared(store, key, sharedKey, freshForMs);
        if (published !== undefined) {
          await store.unlock(lockKey);
          return published;
        }
      } else {
        // Another instance is counting this key: wait for its result, within the lock's time.
        const deadline = Date.now() + LOCK_MS;
        while (Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
          const published = await this.readShared(store, key, sharedKey, freshForMs);
          if (published !== undefined) return published;
        }
      }
    } catch (error) {
      this.sharedFailed(error as Error);
      return this.counted(key, compute);
    }
    // Counting is outside the store's error handling: a failed count is the request's error, not
    // the store's, and is not run a second time.
    if (!locked) return this.counted(key, compute); // the other instance did not publish in time
    try {
      const value = await this.counted(key, compute);
      await store
        .publish(sharedKey, JSON.stringify(value), this.ttlMs, lockKey)
        .catch((error: Error) => this.sharedFailed(error));
      return value;
    } catch (error) {
      await store.unlock(lockKey).catch(() => undefined);
      throw error;
    }
  }

  /** A total another instance (or this one) published, remembered here for its remaining time. */
  private async readShared(
    store: SharedTotalsStore,
    key: string,
    sharedKey: string,
    freshForMs: number,
  ): Promise<ListingTotal | undefined> {
    const published = await store.read(sharedKey);
    if (!published || published.remainingMs <= freshForMs) return undefined;
    const { value, remainingMs } = published;
    const parsed = JSON.parse(value) as ListingTotal;
    // A histogram's buckets too: keyset and window totals are worked out from them.
    const total: ListingTotal = { total: Number(parsed.total), maxId: Number(parsed.maxId) };
    if (parsed.countedAt !== undefined) total.countedAt = Number(parsed.countedAt);
    if (Array.isArray(parsed.buckets)) {
      total.buckets = parsed.buckets.map((bucket) => bucket.map(Number) as Bucket);
    }
    this.remember(key, total, Math.min(remainingMs, this.ttlMs));
    return total;
  }

  private sharedFailed(error: Error): void {
    // Every request that would have shared a total fails alike: one line every half minute.
    const now = Date.now();
    if (now - this.sharedFailureLoggedAt < 30_000) return;
    this.sharedFailureLoggedAt = now;
    this.logger.warn(`Shared totals unavailable, counting locally: ${error.message}`);
  }

  /** `countMs`: how long the count took (unknown for a total another instance published). */
  private remember(key: string, value: ListingTotal, ttlMs: number, countMs = 0): void {
    if (this.entries.size >= CountCache.MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    const expiresAt = Date.now() + ttlMs;
    const windowMs = Math.min(
      this.ttlMs,
      Math.max(this.refreshAheadMs, REFRESH_AHEAD_COUNT_TIMES * countMs),
    );
    this.entries.delete(key);
    this.entries.set(key, {
      value,
      expiresAt,
      refreshFrom: expiresAt - windowMs,
      recount: 'not started',
    });
  }
}
