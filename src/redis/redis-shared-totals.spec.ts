import { randomUUID } from 'node:crypto';
import { loadConfig } from '../config/app-config';
import type { ListingTotal } from '../common/listing/listing.repository';
import { RedisSharedTotals } from './redis-shared-totals';
import { SharedRedis } from './shared-redis';

describe('RedisSharedTotals', () => {
  const config = loadConfig({ REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  const shared = new SharedRedis(config);
  const store = new RedisSharedTotals(shared);
  const key = `redis-shared-totals-spec:${randomUUID()}`;

  beforeAll(() => shared.onModuleInit());
  afterAll(async () => {
    await shared.client()!.del(`${key}:fresh`, `${key}:lock`, `${key}:base`);
    await shared.onApplicationShutdown();
  });

  it('gives back a published total whole: its buckets, its recent rows and its marks, as numbers', async () => {
    const total: ListingTotal = {
      total: 12,
      maxId: 40,
      countedAt: 1_764_000_000_000,
      buckets: [
        [0, 5, 1, 9],
        [1, 7, 10, 40, 3600, 7199],
      ],
      recent: { settledId: 30, total: 2, buckets: [[1, 2, 31, 40]] },
      marks: [[9, 'Grace Hopper', 17]],
    };
    expect(await store.lock(`${key}:lock`, 5_000)).toBe(true);
    await store.publish(key, total, 5_000, 60_000, `${key}:lock`);
    const read = await store.read(key);
    expect(read?.total).toEqual(total);
    expect(await store.readBase(key)).toEqual(total);
    expect(read?.remainingMs).toBeGreaterThan(0);
    expect(read?.remainingMs).toBeLessThanOrEqual(5_000);
    // Publishing gave the lock up.
    expect(await store.lock(`${key}:lock`, 5_000)).toBe(true);
    // The total is written once: a histogram's is the bulk of what Redis holds for its key.
    const redis = shared.client()!;
    const written = await Promise.all(
      [key, `${key}:fresh`, `${key}:base`].map((name) => redis.strlen(name)),
    );
    expect(written.reduce((sum, length) => sum + length, 0)).toBeLessThan(
      JSON.stringify(total).length + 8,
    );
  });

  it('reads nothing where nothing was published', async () => {
    expect(await store.read(`${key}:absent`)).toBeUndefined();
    expect(await store.readBase(`${key}:absent`)).toBeUndefined();
  });

  it('keeps a published total as a base after it has expired', async () => {
    const expiring = `${key}:expiring`;
    await store.publish(expiring, { total: 3, maxId: 9 }, 20, 60_000, `${expiring}:lock`);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(await store.read(expiring)).toBeUndefined();
    expect(await store.readBase(expiring)).toEqual({ total: 3, maxId: 9 });
    await shared.client()!.del(`${expiring}:base`, `${expiring}:fresh`);
  });
});
