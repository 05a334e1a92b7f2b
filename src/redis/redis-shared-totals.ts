import type { ChainableCommander, default as Redis } from 'ioredis';
import type { SharedTotalsStore } from '../common/listing/shared-totals';
import type { Bucket, ListingTotal, Mark } from '../common/listing/listing.repository';
import { SharedRedis } from './shared-redis';

const baseKey = (key: string) => `${key}:base`;
const freshKey = (key: string) => `${key}:fresh`;

/**
 * The listings' shared totals in Redis, and a lock per key (SET NX PX). A total is written once,
 * kept as the base to advance; a one-byte key beside it says how long it is current.
 */
export class RedisSharedTotals implements SharedTotalsStore {
  private readonly redis: Redis;

  /** Opens the shared connection now, so that boot gives it its moment to connect. */
  constructor(shared: SharedRedis) {
    const client = shared.client();
    if (!client) throw new Error('REDIS_URL is not set');
    this.redis = client;
  }

  async read(key: string): Promise<{ total: ListingTotal; remainingMs: number } | undefined> {
    const [remainingMs, value] = await run(
      this.redis.multi().pttl(freshKey(key)).get(baseKey(key)),
    );
    return Number(remainingMs) > 0 && value !== null
      ? { total: fromJson(value as string), remainingMs: Number(remainingMs) }
      : undefined;
  }

  async lock(lockKey: string, ms: number): Promise<boolean> {
    return (await this.redis.set(lockKey, '1', 'PX', ms, 'NX')) !== null;
  }

  async unlock(lockKey: string): Promise<void> {
    await this.redis.del(lockKey);
  }

  async publish(
    key: string,
    total: ListingTotal,
    ttlMs: number,
    baseMs: number,
    lockKey: string,
  ): Promise<void> {
    await run(
      this.redis
        .multi()
        .set(baseKey(key), JSON.stringify(total), 'PX', Math.max(baseMs, ttlMs))
        .set(freshKey(key), '1', 'PX', ttlMs)
        .del(lockKey),
    );
  }

  async readBase(key: string): Promise<ListingTotal | undefined> {
    const value = await this.redis.get(baseKey(key));
    return value === null ? undefined : fromJson(value);
  }
}

/** A transaction's replies; a failed command (ioredis resolves it with its error) fails it all. */
async function run(transaction: ChainableCommander): Promise<unknown[]> {
  const replies = await transaction.exec();
  if (!replies) throw new Error('Redis transaction aborted');
  for (const [error] of replies) if (error) throw error;
  return replies.map(([, reply]) => reply);
}

/**
 * A published total as numbers again, its histogram's buckets and its marks too. A value of
 * another shape (another version's, a damaged key) throws: the total is then counted locally.
 */
function fromJson(value: string): ListingTotal {
  const parsed = JSON.parse(value) as ListingTotal;
  const buckets = (list: Bucket[]) => list.map((bucket) => bucket.map(Number) as Bucket);
  const total: ListingTotal = { total: count(parsed.total), maxId: count(parsed.maxId) };
  if (parsed.countedAt !== undefined) total.countedAt = count(parsed.countedAt);
  if (Array.isArray(parsed.buckets)) total.buckets = buckets(parsed.buckets);
  if (parsed.recent) {
    const { settledId, total: rows, buckets: recentBuckets } = parsed.recent;
    total.recent = { settledId: count(settledId), total: count(rows) };
    if (Array.isArray(recentBuckets)) total.recent.buckets = buckets(recentBuckets);
  }
  if (Array.isArray(parsed.marks)) {
    total.marks = parsed.marks.map(([rank, sortValue, id]): Mark => [
      count(rank),
      String(sortValue),
      count(id),
    ]);
  }
  return total;
}

/** A count, id or time a published total holds: a whole number, never negative. */
function count(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw new Error(`a shared total holds ${JSON.stringify(value)} where a count belongs`);
}
