import { Controller, Get, Query } from '@nestjs/common';
import { CurrentPrincipal, RequireScopes } from '../../../src/common/auth/auth.decorators';
import type { Principal } from '../../../src/common/auth/principal';
import { ApiListing } from '../../../src/common/listing/api-listing.decorator';
import type { ListingExport } from '../../../src/common/listing/listing-export';
import { ListingFormat } from '../../../src/common/listing/listing-format.decorator';
import { ListingPager } from '../../../src/common/listing/listing-pager';
import type { Page } from '../../../src/common/listing/page';
import { AnnouncementView } from './announcement.view';
import { ANNOUNCEMENTS_READ } from './announcements.listing';
import { AnnouncementsRepository } from './announcements.repository';
import { ListAnnouncementsQueryDto } from './list-announcements-query.dto';

@Controller({ path: 'announcements', version: '1' })
export class AnnouncementsController {
  constructor(
    private readonly pager: ListingPager,
    private readonly announcements: AnnouncementsRepository,
  ) {}

  @Get()
  @RequireScopes(ANNOUNCEMENTS_READ)
  @ApiListing(AnnouncementView, { summary: 'List announcements', envelopeName: 'AnnouncementPage' })
  list(
    @Query() query: ListAnnouncementsQueryDto,
    @CurrentPrincipal() principal: Principal,
    @ListingFormat() format: ListingFormat,
  ): Promise<Page<AnnouncementView> | ListingExport> {
    return this.pager.list(this.announcements, query, principal, format);
  }
}
