import { loadConfig } from '../../config/app-config';
import type { Principal } from '../auth/principal';
import { CountCache } from './count-cache';
import type { ListingDefinition } from './listing-definition';
import { ListingRollups } from './listing-rollup';
import { ListingCursors } from './listing-cursor';
import { ListingExporter } from './listing-export';
import { ListingPager } from './listing-pager';
import { ListingTotals } from './listing-totals';
import { ListingWalks } from './listing-walk';
import type { ListingRepository, PageOptions } from './listing.repository';

describe('ListingPager, time limits', () => {
  const definition: ListingDefinition = {
    resource: 'things',
    table: 'things',
    organizationColumn: 'organization_id',
    sortableColumns: [],
    filters: {},
    indexes: [],
  };
  const principal: Principal = {
    tokenId: 1,
    tokenName: 'spec',
    scopes: new Set(),
    organizationId: null,
  };
  const limitOf = (options: PageOptions) => options.statementTimeoutMs;
  let clock: number;

  beforeEach(() => {
    clock = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => clock);
  });
  afterEach(() => jest.restoreAllMocks());

  it("recounts a total in the background under COUNT_CACHE_RECOUNT_TIMEOUT_MS, and reads pages under the requests' limit", async () => {
    const config = loadConfig({
      COUNT_CACHE_TTL_MS: '1000',
      COUNT_CACHE_RECOUNT_TIMEOUT_MS: '20000',
      // Every background recount is a full one here.
      COUNT_CACHE_FULL_RECOUNT_MS: '0',
      DB_STATEMENT_TIMEOUT_MS: '5000',
    });
    const counts = new CountCache(config);
    const rollups = new ListingRollups(config);
    const walks = new ListingWalks(counts, rollups, config);
    const totals = new ListingTotals(counts, rollups, walks);
    const cursors = new ListingCursors(config);
    const pager = new ListingPager(
      walks,
      totals,
      cursors,
      new ListingExporter(walks, cursors),
      config,
    );
    const repository = {
      definition,
      countAndFindPage: jest.fn(
        async (_criteria: unknown, _offset: number, _limit: number, _options: PageOptions) => ({
          total: { total: 50, maxId: 50 },
          items: [],
          completeAsOf: Date.now(),
        }),
      ),
      countSettled: jest.fn(
        async (_criteria: unknown, _bucket: unknown, _floor: unknown, _options: PageOptions) => ({
          total: 60,
          maxId: 60,
        }),
      ),
      findPageAfterCount: jest.fn(
        async (
          _criteria: unknown,
          _offset: number,
          _limit: number,
          _known: unknown,
          _options: PageOptions,
        ) => ({ items: [], completeAsOf: Date.now() }),
      ),
    };
    const listing = repository as unknown as ListingRepository<{ id: number }>;
    const query = { page: 1, limit: 20, sort: 'id' };

    // A miss: the request counts (with its page) under its own limit.
    expect((await pager.paginate(listing, query, principal)).total).toBe(50);
    expect(repository.countAndFindPage.mock.calls.map((call) => limitOf(call[3]))).toEqual([5000]);

    clock = 600; // in the refresh-ahead window: the recount runs in the background
    expect((await pager.paginate(listing, query, principal)).total).toBe(50);
    await new Promise((resolve) => setImmediate(resolve));
    expect(repository.countSettled.mock.calls.map((call) => limitOf(call[3]))).toEqual([20000]);
    expect(repository.findPageAfterCount.mock.calls.map((call) => limitOf(call[4]))).toEqual([
      5000,
    ]);
    expect((await pager.paginate(listing, query, principal)).total).toBe(60);
  });
});
