import { loadConfig } from '../../config/app-config';
import { CountCache } from './count-cache';
import type { ListingCriteria } from './listing-criteria';
import { ListingRollups } from './listing-rollup';
import { ListingTotals } from './listing-totals';
import { ListingWalks, type Walk } from './listing-walk';
import type { ListingRepository } from './listing.repository';
import { loginActivitiesListing } from '../../login-activities/login-activities.listing';
import type { ReadReplicas, ReadSource } from '../../database/read-replicas';
import { usersListing } from '../../users/users.listing';
import type { ListingQuery } from './listing-query.dto';

describe('ListingTotals from a rollup', () => {
  afterEach(() => jest.restoreAllMocks());

  it('recounts a total from the rollup it has while a rebuild reads the whole table', async () => {
    let clock = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => clock);
    const config = loadConfig({
      COUNT_CACHE_TTL_MS: '10000',
      COUNT_CACHE_RECOUNT_TIMEOUT_MS: '20000',
      COUNT_CACHE_FULL_RECOUNT_MS: '5000',
    });
    let reads = 0;
    const repository = {
      definition: { resource: 'log', filters: {}, rollup: { columns: ['success'], time: 'at' } },
      isMysql: () => false,
      settledId: () => 10,
      settledOn: async () => 10,
      highestIdNow: async () => 10,
      count: async () => ({ total: 0, maxId: 10 }),
      // The first build reads its rows; the rebuild's first read never ends (minutes at 50M rows).
      countByGroup: () =>
        reads++ === 0
          ? Promise.resolve([{ success: 1, bucket: 0, n: 10, first_id: 1, last_id: 10 }])
          : new Promise(() => undefined),
    } as unknown as ListingRepository<{ id: number }>;
    const counts = new CountCache(config);
    const rollups = new ListingRollups(config);
    const totals = new ListingTotals(counts, rollups, new ListingWalks(counts, rollups, config));
    const walk = {
      repository,
      criteria: { conditions: [] } as unknown as ListingCriteria,
      key: 'log|',
    } as unknown as Walk<{ id: number }>;
    await rollups.build(repository);
    expect(await totals.of(walk)).toMatchObject({ total: 10 });

    // In the refresh-ahead window, a rebuild due: the recount starts, and the rebuild with it.
    clock += 6_000;
    await totals.of(walk);
    // Past the total's time and its recount's: a request waits for that recount.
    clock += 30_000;
    const answered = await Promise.race([
      totals.of(walk),
      new Promise((resolve) => setTimeout(() => resolve('waited for the rebuild'), 1000)),
    ]);
    expect(answered).toMatchObject({ total: 10, maxId: 10 });
    expect(reads).toBe(2); // the rebuild did start
  });
});

describe('ListingTotals.warm', () => {
  afterEach(() => jest.restoreAllMocks());

  it('counts the tables in full when asked, however recent the last full count', async () => {
    let clock = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => clock);
    const config = loadConfig({
      COUNT_CACHE_TTL_MS: '1000',
      COUNT_CACHE_FULL_RECOUNT_MS: '10000',
    });
    /** Each count's kind: in full, or advanced from the highest id counted before. */
    const kinds: string[] = [];
    const repository = {
      definition: loginActivitiesListing,
      timeOrders: new Set(['id', 'created_at']),
      isMysql: () => false,
      isTimestamp: (column: string) => column === 'created_at',
      settledId: () => undefined,
      countSettled: async (_: unknown, bucket: unknown, sinceMaxId?: number) => {
        kinds.push(sinceMaxId === undefined ? 'full' : 'advanced');
        return { total: 1, maxId: 10, ...(bucket ? { buckets: [[0, 1, 10, 10]] } : {}) };
      },
    } as unknown as ListingRepository<{ id: number }>;
    const counts = new CountCache(config);
    const rollups = new ListingRollups(config);
    const totals = new ListingTotals(counts, rollups, new ListingWalks(counts, rollups, config));
    await totals.warm(repository, {});
    expect(kinds).toEqual(['full', 'full', 'full']); // the total, its histograms by id and time
    // Expired, and counted in full less than COUNT_CACHE_FULL_RECOUNT_MS ago: a warm-up would
    // advance them; the periodic recount counts them in full.
    clock += 9_500;
    await totals.warm(repository, {}, true);
    expect(kinds.slice(3)).toEqual(['full', 'full', 'full']);
  });
});

describe('ListingTotals.marks', () => {
  it('takes marks on one server, up to the id settled as of what that server holds', async () => {
    const config = loadConfig({ COUNT_CACHE_TTL_MS: '60000' });
    const replica = { name: 'replica0', isReplica: true, staleMs: () => 3000 } as ReadSource;
    const readReplicas = { source: () => replica } as unknown as ReadReplicas;
    const servers = new Set<unknown>();
    const rows = Array.from({ length: 10 }, (_, i) => ({ id: i + 1, name: `n${i}` }));
    let read = 0;
    const repository = {
      definition: usersListing,
      timeOrders: new Set(['id', 'created_at', 'updated_at']),
      isMysql: () => false,
      isTimestamp: (column: string) => column.endsWith('_at'),
      // As of now, a later id has settled; as of what the replica holds, 7.
      settledId: () => 10,
      settledOn: async (source: unknown) => {
        servers.add(source);
        return 7;
      },
      highestIdNow: async (options: { source?: unknown }) => {
        servers.add(options.source);
        return 10;
      },
      findForward: async (_: unknown, __: number, ___: number, options: { source?: unknown }) => {
        servers.add(options.source);
        return { items: read < 7 ? [rows[read++]] : [], completeAsOf: 0 };
      },
      count: async (_: unknown, options: { source?: unknown }) => {
        servers.add(options.source);
        return { total: 0, maxId: 10 };
      },
      sortValueOf: (row: Record<string, unknown>, column: string) => row[column],
      sortParameter: (_: string, value: unknown) => value,
    } as unknown as ListingRepository<{ id: number }>;
    const counts = new CountCache(config);
    const rollups = new ListingRollups(config);
    const walks = new ListingWalks(counts, rollups, config);
    const totals = new ListingTotals(counts, rollups, walks, readReplicas);
    const principal = {
      tokenId: 1,
      tokenName: 't',
      scopes: new Set<string>(),
      organizationId: null,
    };
    const walk = walks.of(repository, { sort: 'name' } as ListingQuery, principal, 20);
    const marked = await totals.marks(walk, 7, true);
    expect(marked?.maxId).toBe(7);
    expect(marked?.marks).toHaveLength(7);
    expect([...servers]).toEqual([replica]);
  });
});
