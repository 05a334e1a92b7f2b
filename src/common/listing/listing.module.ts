import { Global, Module } from '@nestjs/common';
import { CountCache } from './count-cache';
import { ListingPager } from './listing-pager';

/** The shared paging machinery, available to every listing module. */
@Global()
@Module({
  providers: [CountCache, ListingPager],
  exports: [CountCache, ListingPager],
})
export class ListingModule {}
