import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { SharedRedis } from '../../redis/shared-redis';
import type { ListingTotal } from './listing.repository';

interface Entry {
  value: ListingTotal;
  expiresAt: number;
}

/** How long one instance may hold the right to count a key before others count it themselves. */
const LOCK_MS = 5_000;
const POLL_MS = 25;

/**
 * Caches listing totals for a short time so that `page_count` does not cost a full COUNT per
 * request. The rows of a page are never cached; only the total may be up to the TTL old.
 *
 * - One count runs per key at a time in this process: concurrent requests for the same key share
 *   it, also with the TTL at 0 (they then share a count that started after they arrived).
 * - With REDIS_URL, totals are shared between instances: a miss first looks in Redis; the
 *   instance that takes a short lock (SET NX PX) counts and publishes, the others wait for its
 *   result (at most the lock's time) instead of counting too. Any Redis failure falls back to
 *   counting here: Redis makes totals cheaper, never wrong or unavailable.
 */
@Injectable()
export class CountCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<ListingTotal>>();
  private readonly ttlMs: number;
  private readonly redis?: Redis;
  /** Per database, so that services on different databases can share one Redis. */
  private readonly keyPrefix: string;
  private readonly logger = new Logger(CountCache.name);
  private redisFailureLogged = false;
  private static readonly MAX_ENTRIES = 10_000;

  constructor(@Inject(APP_CONFIG) config: AppConfig, redis: SharedRedis) {
    this.ttlMs = config.countCacheTtlMs;
    const database = config.database.url ?? config.database.sqlitePath;
    this.keyPrefix = `${config.redisKeyPrefix}count:${createHash('sha256').update(database).digest('base64url').slice(0, 12)}:`;
    if (this.ttlMs > 0) this.redis = redis.client();
    this.redis?.on('ready', () => (this.redisFailureLogged = false));
  }

  async get(key: string, compute: () => Promise<ListingTotal>): Promise<ListingTotal> {
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > Date.now()) return cached.value;

    const running = this.inFlight.get(key);
    if (running) return running;

    const promise = (this.redis ? this.shared(key, compute) : this.counted(key, compute)).finally(
      () => this.inFlight.delete(key),
    );
    this.inFlight.set(key, promise);
    return promise;
  }

  private async counted(key: string, compute: () => Promise<ListingTotal>): Promise<ListingTotal> {
    const value = await compute();
    if (this.ttlMs > 0) this.remember(key, value, this.ttlMs);
    return value;
  }

  private async shared(key: string, compute: () => Promise<ListingTotal>): Promise<ListingTotal> {
    const redis = this.redis!;
    const redisKey = `${this.keyPrefix}${createHash('sha256').update(key).digest('base64url')}`;
    const lockKey = `${redisKey}:lock`;
    let locked: boolean;
    try {
      const found = await this.readShared(redis, key, redisKey);
      if (found !== undefined) return found;
      locked = (await redis.set(lockKey, '1', 'PX', LOCK_MS, 'NX')) !== null;
      if (locked) {
        // The total may have been published between the first look and taking the lock.
        const published = await this.readShared(redis, key, redisKey);
        if (published !== undefined) {
          await redis.del(lockKey);
          return published;
        }
      } else {
        // Another instance is counting this key: wait for its result, within the lock's time.
        const deadline = Date.now() + LOCK_MS;
        while (Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
          const published = await this.readShared(redis, key, redisKey);
          if (published !== undefined) return published;
        }
      }
    } catch (error) {
      this.redisFailed(error as Error);
      return this.counted(key, compute);
    }
    // Counting is outside the Redis error handling: a failed count is the request's error, not
    // Redis's, and is not run a second time.
    if (!locked) return this.counted(key, compute); // the other instance did not publish in time
    try {
      const value = await this.counted(key, compute);
      await redis
        .multi()
        .set(redisKey, JSON.stringify(value), 'PX', this.ttlMs)
        .del(lockKey)
        .exec()
        .catch((error: Error) => this.redisFailed(error));
      return value;
    } catch (error) {
      await redis.del(lockKey).catch(() => undefined);
      throw error;
    }
  }

  /** A total another instance (or this one) published, remembered here for its remaining time. */
  private async readShared(
    redis: Redis,
    key: string,
    redisKey: string,
  ): Promise<ListingTotal | undefined> {
    const replies = await redis.multi().get(redisKey).pttl(redisKey).exec();
    if (!replies) throw new Error('Redis transaction aborted');
    for (const [error] of replies) if (error) throw error;
    const value = replies[0][1] as string | null;
    const remainingMs = Number(replies[1][1]);
    if (value === null || remainingMs <= 0) return undefined;
    const parsed = JSON.parse(value) as ListingTotal;
    const total = { total: Number(parsed.total), maxId: Number(parsed.maxId) };
    this.remember(key, total, Math.min(remainingMs, this.ttlMs));
    return total;
  }

  private redisFailed(error: Error): void {
    if (this.redisFailureLogged) return;
    this.redisFailureLogged = true;
    this.logger.warn(`Redis unavailable for shared totals, counting locally: ${error.message}`);
  }

  private remember(key: string, value: ListingTotal, ttlMs: number): void {
    if (this.entries.size >= CountCache.MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: Date.now() + ttlMs });
  }
}
