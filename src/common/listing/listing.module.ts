import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CountCache } from './count-cache';
import { ListingCursors } from './listing-cursor';
import { ListingPager } from './listing-pager';
import { ListingRollups } from './listing-rollup';
import { ListingWarmup } from './listing-warmup';

/** The shared paging machinery, available to every listing module. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [CountCache, ListingCursors, ListingPager, ListingRollups, ListingWarmup],
  exports: [CountCache, ListingPager, ListingRollups, ListingWarmup],
})
export class ListingModule {}
