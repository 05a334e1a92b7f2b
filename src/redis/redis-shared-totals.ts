import type { ChainableCommander, default as Redis } from 'ioredis';
import type { SharedTotalsStore } from '../common/listing/shared-totals';
import { SharedRedis } from './shared-redis';

/** The listings' shared totals in Redis: values with an expiry, and a lock per key (SET NX PX). */
export class RedisSharedTotals implements SharedTotalsStore {
  private readonly redis: Redis;

  /** Opens the shared connection now, so that boot gives it its moment to connect. */
  constructor(shared: SharedRedis) {
    const client = shared.client();
    if (!client) throw new Error('REDIS_URL is not set');
    this.redis = client;
  }

  async read(key: string): Promise<{ value: string; remainingMs: number } | undefined> {
    const [value, remainingMs] = await run(this.redis.multi().get(key).pttl(key));
    return value === null
      ? undefined
      : { value: value as string, remainingMs: Number(remainingMs) };
  }

  async lock(lockKey: string, ms: number): Promise<boolean> {
    return (await this.redis.set(lockKey, '1', 'PX', ms, 'NX')) !== null;
  }

  async unlock(lockKey: string): Promise<void> {
    await this.redis.del(lockKey);
  }

  async publish(key: string, value: string, ttlMs: number, lockKey: string): Promise<void> {
    await run(this.redis.multi().set(key, value, 'PX', ttlMs).del(lockKey));
  }
}

/** A transaction's replies; a failed command (ioredis resolves it with its error) fails it all. */
async function run(transaction: ChainableCommander): Promise<unknown[]> {
  const replies = await transaction.exec();
  if (!replies) throw new Error('Redis transaction aborted');
  for (const [error] of replies) if (error) throw error;
  return replies.map(([, reply]) => reply);
}
