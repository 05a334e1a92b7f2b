import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { eventually } from '../../../test/kit/eventually';
import { loadConfig } from '../../config/app-config';
import { RedisSharedTotals } from '../../redis/redis-shared-totals';
import { SharedRedis } from '../../redis/shared-redis';
import { CountCache } from './count-cache';
import type { ListingTotal } from './listing.repository';

function deferred() {
  let resolve!: (value: ListingTotal) => void;
  const promise = new Promise<ListingTotal>((r) => (resolve = r));
  return { promise, resolve };
}

describe('CountCache', () => {
  const cache = (ttl: string, recountTimeout = '20000') => {
    const config = loadConfig({
      COUNT_CACHE_TTL_MS: ttl,
      COUNT_CACHE_RECOUNT_TIMEOUT_MS: recountTimeout,
    });
    return new CountCache(config);
  };
  const total = (n: number): ListingTotal => ({ total: n, maxId: n });
  const never = () => Promise.reject(new Error('not expected to count'));
  /** Lets a finished background count land (its callbacks run). */
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('keeps the totals it is asked for when full, dropping the least recently read first', async () => {
    const counts = cache('10000');
    await counts.get('table histogram', () => Promise.resolve(total(1)));
    await counts.get('first other', () => Promise.resolve(total(2)));
    for (let i = 0; i < 10_000; i++) {
      expect(counts.peek('table histogram')).toEqual(total(1));
      await counts.get(`key ${i}`, () => Promise.resolve(total(i)));
    }
    expect(counts.peek('table histogram')).toEqual(total(1));
    expect(counts.peek('first other')).toBeUndefined();
  });

  it('holds at most 400k buckets in all, dropping the least recently read histograms first', async () => {
    const counts = cache('10000');
    const histogram = (n: number): ListingTotal => ({
      total: n,
      maxId: n,
      buckets: Array.from({ length: 80_000 }, (_, i) => [i, n]),
    });
    await counts.get('table histogram', () => Promise.resolve(histogram(1)));
    await counts.get('first other', () => Promise.resolve(histogram(2)));
    for (let i = 0; i < 5; i++) {
      expect(counts.peek('table histogram')?.total).toBe(1);
      await counts.get(`deep page ${i}`, () => Promise.resolve(histogram(10 + i)));
    }
    expect(counts.peek('table histogram')?.total).toBe(1);
    expect(counts.peek('first other')).toBeUndefined();
    expect(counts.peek('deep page 0')).toBeUndefined();
    expect(counts.peek('deep page 4')?.total).toBe(14);
  });

  it('warms a histogram in the background once per key, and at most two at a time', async () => {
    const counts = cache('10000');
    const first = deferred();
    const counter = jest.fn(() => first.promise);
    expect(counts.warm('a', counter)).toBe(false);
    expect(counts.warm('a', counter)).toBe(false); // being counted: not waited for, not again
    expect(counts.warm('b', () => new Promise<ListingTotal>(() => undefined))).toBe(false);
    const third = jest.fn(() => Promise.resolve(total(3)));
    expect(counts.warm('c', third)).toBe(false);
    expect(third).not.toHaveBeenCalled(); // two already running
    first.resolve(total(1));
    await settle();
    expect(counts.warm('a', never)).toBe(true); // counted: the next `get` uses it
    expect(counts.warm('c', third)).toBe(false);
    expect(third).toHaveBeenCalledTimes(1);
    expect(counter).toHaveBeenCalledTimes(1);
  });

  it('runs one count for concurrent callers of a key, even with the cache off', async () => {
    const counts = cache('0');
    const pending = deferred();
    const compute = jest.fn(() => pending.promise);
    const callers = Array.from({ length: 10 }, () => counts.get('k', compute));
    pending.resolve({ total: 7, maxId: 9 });
    expect(await Promise.all(callers)).toEqual(Array(10).fill({ total: 7, maxId: 9 }));
    expect(compute).toHaveBeenCalledTimes(1);

    // With the cache off, the next request counts again.
    await counts.get('k', async () => ({ total: 8, maxId: 10 }));
    expect(await counts.get('k', async () => ({ total: 9, maxId: 11 }))).toEqual({
      total: 9,
      maxId: 11,
    });
  });

  it('reuses a total within its time and keeps keys apart', async () => {
    const counts = cache('60000');
    await counts.get('a', async () => ({ total: 1, maxId: 1 }));
    const again = jest.fn(async () => ({ total: 2, maxId: 2 }));
    expect(await counts.get('a', again)).toEqual({ total: 1, maxId: 1 });
    expect(again).not.toHaveBeenCalled();
    expect(await counts.get('b', again)).toEqual({ total: 2, maxId: 2 });
  });

  it('does not cache a failed count', async () => {
    const counts = cache('60000');
    await expect(counts.get('k', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await counts.get('k', async () => ({ total: 3, maxId: 3 }))).toEqual({
      total: 3,
      maxId: 3,
    });
  });

  describe('refresh ahead (a 1000 ms time: the last 500 ms are the window)', () => {
    let clock: number;

    beforeEach(() => {
      clock = 0;
      jest.spyOn(Date, 'now').mockImplementation(() => clock);
    });
    afterEach(() => jest.restoreAllMocks());

    it('recounts in the background in the window and answers from the cache meanwhile', async () => {
      const counts = cache('1000');
      await counts.get('k', async () => total(1));
      const pending = deferred();
      const recount = jest.fn(() => pending.promise);

      clock = 499; // before the window: nothing to do
      expect(await counts.get('k', never, recount)).toEqual(total(1));
      expect(recount).not.toHaveBeenCalled();

      clock = 500; // in the window: answered at once, one recount starts
      expect(await counts.get('k', never, recount)).toEqual(total(1));
      clock = 550;
      expect(await counts.get('k', never, recount)).toEqual(total(1));
      expect(recount).toHaveBeenCalledTimes(1);

      pending.resolve(total(2));
      await settle();
      clock = 900; // the old total has not expired yet, but the new one replaced it
      expect(await counts.get('k', never, recount)).toEqual(total(2));
      clock = 1049; // and it has a whole time of its own (counted at 550: its window opens at 1050)
      expect(await counts.get('k', never, recount)).toEqual(total(2));
      expect(recount).toHaveBeenCalledTimes(1);
    });

    it('logs a recount that fails as the app shuts down (its pool closed) as nothing', async () => {
      const counts = cache('1000');
      await counts.get('k', async () => total(1));
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const fail = () => Promise.reject(new Error('Pool is closed.'));
      clock = 500;
      await counts.get('k', never, fail);
      await settle();
      expect(warn).toHaveBeenCalledTimes(1); // while it runs: a failure worth a line
      clock = 1000;
      await counts.get('k', () => Promise.resolve(total(1)));
      counts.onModuleDestroy();
      clock = 1500;
      await counts.get('k', never, fail);
      await settle();
      expect(warn).toHaveBeenCalledTimes(1);
    });

    it('opens the window earlier for a total whose count took long: twice its time before expiry', async () => {
      const counts = cache('1000');
      const first = deferred();
      const counting = counts.get('k', () => first.promise);
      clock = 400; // the count took 400 ms: the window is the last 800 ms (from 600 to 1400)
      first.resolve(total(1));
      expect(await counting).toEqual(total(1));
      const recount = jest.fn(() => deferred().promise);

      clock = 599;
      expect(await counts.get('k', never, recount)).toEqual(total(1));
      expect(recount).not.toHaveBeenCalled();
      clock = 600;
      expect(await counts.get('k', never, recount)).toEqual(total(1));
      expect(recount).toHaveBeenCalledTimes(1);
    });

    it('serves a total past its time while its recount runs, at most the recount limit past it', async () => {
      const counts = cache('1000', '2000');
      await counts.get('k', async () => total(1));
      const pending = deferred();
      clock = 900;
      expect(await counts.get('k', never, () => pending.promise)).toEqual(total(1));

      clock = 1000; // expired, its recount still running: the old total, no count of its own
      expect(await counts.get('k', never, never)).toEqual(total(1));
      clock = 2999; // the recount's limit (2000 ms) past its time is the most it is served
      expect(await counts.get('k', never, never)).toEqual(total(1));

      clock = 3000; // past that: wait for the recount, do not count again
      const waiting = counts.get('k', never, never);
      pending.resolve(total(2));
      expect(await waiting).toEqual(total(2));
    });

    it('serves the new total as soon as a late recount lands', async () => {
      const counts = cache('1000', '2000');
      await counts.get('k', async () => total(1));
      const pending = deferred();
      clock = 900;
      await counts.get('k', never, () => pending.promise);
      clock = 1500;
      expect(await counts.get('k', never, never)).toEqual(total(1));
      pending.resolve(total(2));
      await settle();
      // (Its count took 600 ms, so its own window is open at once: a recount starts, unanswered.)
      expect(await counts.get('k', never, () => deferred().promise)).toEqual(total(2));
    });

    it('after a failed recount keeps the total until its time, then counts on request', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const counts = cache('1000');
      await counts.get('k', async () => total(1));
      const failing = jest.fn(() => Promise.reject(new Error('down')));
      clock = 900;
      expect(await counts.get('k', never, failing)).toEqual(total(1));
      await settle();
      clock = 950; // one attempt per total: no second recount in its window
      expect(await counts.get('k', never, failing)).toEqual(total(1));
      expect(failing).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('down'));

      clock = 1000; // its recount has ended: an expired total is not served
      expect(await counts.get('k', async () => total(3), never)).toEqual(total(3));
    });

    it('does not refresh ahead with the cache off', async () => {
      const counts = cache('0');
      const compute = jest.fn(async () => total(4));
      await counts.get('k', compute, never);
      await counts.get('k', compute, never);
      expect(compute).toHaveBeenCalledTimes(2);
    });
  });

  describe('refresh ahead through Redis', () => {
    const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const prefix = `count-cache-spec:${randomUUID()}:`;
    const redis = new Redis(redisUrl, { lazyConnect: true });
    const shared: SharedRedis[] = [];
    let clock = 0;

    const sharedCache = async () => {
      const config = loadConfig({
        COUNT_CACHE_TTL_MS: '1000',
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: prefix,
      });
      const connection = new SharedRedis(config);
      shared.push(connection);
      const counts = new CountCache(config, new RedisSharedTotals(connection));
      await connection.onModuleInit();
      return counts;
    };
    /** The totals published as current: each held as its base, beside its `:fresh` marker. */
    const publishedTotals = async () => {
      const current = (await redis.keys(`${prefix}*`)).filter((key) => key.endsWith(':fresh'));
      return Promise.all(
        current.map(async (key) =>
          JSON.parse((await redis.get(key.replace(/:fresh$/, ':base'))) ?? 'null'),
        ),
      );
    };

    beforeAll(() => redis.connect());
    beforeEach(() => jest.spyOn(Date, 'now').mockImplementation(() => clock));
    afterEach(() => jest.restoreAllMocks());
    afterAll(async () => {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      await Promise.all(shared.map((connection) => connection.onApplicationShutdown()));
      await redis.quit();
    });

    it('counts here once the instance counting gives the lock up without a total', async () => {
      jest.restoreAllMocks(); // real time: the wait for the other instance is up to 5 s
      const first = await sharedCache();
      const second = await sharedCache();
      let fail!: (error: Error) => void;
      const failing = first.get('given up', () => new Promise((_, reject) => (fail = reject)));
      failing.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the first holds the lock
      const started = Date.now();
      const counted = second.get('given up', async () => total(7));
      await new Promise((resolve) => setTimeout(resolve, 100));
      fail(new Error('every request waiting for it left'));
      expect(await counted).toEqual(total(7));
      expect(Date.now() - started).toBeLessThan(1000);
      // Its published total is not the next case's.
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
    });

    it('recounts and publishes when Redis holds only the old total; others take the new one', async () => {
      const first = await sharedCache();
      const second = await sharedCache();
      await first.get('k', async () => total(1));
      expect(await second.get('k', never)).toEqual(total(1)); // from Redis

      // The published total is near its end too (Redis keeps its own time).
      for (const key of await redis.keys(`${prefix}*`)) await redis.pexpire(key, 150);
      clock = 850;
      const recount = jest.fn(async () => total(2));
      expect(await second.get('k', never, recount)).toEqual(total(1));
      await eventually(publishedTotals, (totals) => totals[0]?.total === 2);
      expect(recount).toHaveBeenCalledTimes(1);
      expect(await publishedTotals()).toEqual([total(2)]);

      // The first instance, in its own window, takes the newly published total without counting.
      expect(await first.get('k', never, never)).toEqual(total(1));
      const seen = await eventually(
        () => first.get('k', never, never),
        (value) => value.total === 2,
      );
      expect(seen).toEqual(total(2));
    });
  });
});
