import { Global, Module } from '@nestjs/common';
import { CountCache } from './count-cache';
import { ListingCursors } from './listing-cursor';
import { ListingPager } from './listing-pager';

/** The shared paging machinery, available to every listing module. */
@Global()
@Module({
  providers: [CountCache, ListingCursors, ListingPager],
  exports: [CountCache, ListingPager],
})
export class ListingModule {}
