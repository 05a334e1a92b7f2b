import { loadConfig } from '../../config/app-config';
import { SharedRedis } from '../../redis/shared-redis';
import { CountCache } from './count-cache';
import type { ListingTotal } from './listing.repository';

function deferred() {
  let resolve!: (value: ListingTotal) => void;
  const promise = new Promise<ListingTotal>((r) => (resolve = r));
  return { promise, resolve };
}

describe('CountCache', () => {
  const cache = (ttl: string) => {
    const config = loadConfig({ COUNT_CACHE_TTL_MS: ttl });
    return new CountCache(config, new SharedRedis(config));
  };

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
});
