import type { ListingTotal } from './listing.repository';

/**
 * Where instances share the totals they count, so that one counts a key and the others read its
 * result (Redis with REDIS_URL, provided by `RedisModule` under `SHARED_TOTALS`; null without).
 * Any call may fail: the count cache then counts locally.
 */
export interface SharedTotalsStore {
  /** The total published under `key` and the time it has left, or undefined. */
  read(key: string): Promise<{ total: ListingTotal; remainingMs: number } | undefined>;
  /** Takes the right to count `lockKey` for `ms`: false while another instance holds it. */
  lock(lockKey: string, ms: number): Promise<boolean>;
  unlock(lockKey: string): Promise<void>;
  /**
   * Publishes `total` under `key` for `ttlMs`, and as its base for `baseMs`, and gives up
   * `lockKey`, at once.
   */
  publish(
    key: string,
    total: ListingTotal,
    ttlMs: number,
    baseMs: number,
    lockKey: string,
  ): Promise<void>;
  /** The last total published under `key`, expired or not, kept to advance: or undefined. */
  readBase(key: string): Promise<ListingTotal | undefined>;
}

export const SHARED_TOTALS = Symbol('SHARED_TOTALS');
