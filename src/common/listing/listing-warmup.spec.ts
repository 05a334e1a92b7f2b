import type { DiscoveryService } from '@nestjs/core';
import type { AppConfig } from '../../config/app-config';
import type { DatabaseAvailability } from '../../database/database-availability';
import type { ListingRollups } from './listing-rollup';
import type { ListingTotals } from './listing-totals';
import type { TailWatch } from './tail-watch';
import { ListingWarmup } from './listing-warmup';
import { ListingRepository } from './listing.repository';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ListingWarmup', () => {
  it('counts once each table has a settled id, so that its histograms take in late commits', async () => {
    const table: { settledId?: number } = {};
    const repository = Object.assign(Object.create(ListingRepository.prototype) as object, {
      definition: { resource: 'logs', filters: {} },
      settledId: () => table.settledId,
    });
    const warmed: unknown[] = [];
    const warmup = new ListingWarmup(
      { getProviders: () => [{ instance: repository }] } as unknown as DiscoveryService,
      { warm: async (...args: unknown[]) => void warmed.push(args) } as unknown as ListingTotals,
      { build: async () => undefined, filterValues: () => [] } as unknown as ListingRollups,
      { whenUp: async () => undefined } as unknown as DatabaseAvailability,
      { settled: () => table.settledId !== undefined } as unknown as TailWatch,
      {
        countCacheWarmup: true,
        countCacheTtlMs: 60_000,
        countCacheFullRecountMs: 0,
      } as AppConfig,
    );
    warmup.onApplicationBootstrap();
    await sleep(300);
    expect(warmed).toHaveLength(0);
    table.settledId = 41;
    await sleep(300);
    expect(warmed).toHaveLength(1);
    warmup.onModuleDestroy();
  });
});
