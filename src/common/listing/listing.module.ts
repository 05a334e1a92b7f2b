import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CountCache } from './count-cache';
import { ListingCursors } from './listing-cursor';
import { ListingExporter } from './listing-export';
import { ListingPager } from './listing-pager';
import { ListingRollups } from './listing-rollup';
import { ListingTotals } from './listing-totals';
import { ListingWalks } from './listing-walk';
import { ListingWarmup } from './listing-warmup';
import { TailWatch } from './tail-watch';

/** The shared paging machinery, available to every listing module. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    CountCache,
    ListingCursors,
    ListingWalks,
    ListingTotals,
    ListingExporter,
    ListingPager,
    ListingRollups,
    ListingWarmup,
    TailWatch,
  ],
  exports: [CountCache, ListingPager, ListingRollups, ListingWarmup, TailWatch],
})
export class ListingModule {}
