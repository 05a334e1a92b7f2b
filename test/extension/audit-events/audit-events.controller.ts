import { Controller, Get, Query } from '@nestjs/common';
import { CurrentPrincipal, RequireScopes } from '../../../src/common/auth/auth.decorators';
import type { Principal } from '../../../src/common/auth/principal';
import { ApiListing } from '../../../src/common/listing/api-listing.decorator';
import { ListingPager } from '../../../src/common/listing/listing-pager';
import type { ListingExport } from '../../../src/common/listing/listing-export';
import { ListingFormat } from '../../../src/common/listing/listing-format.decorator';
import type { Page } from '../../../src/common/listing/page';
import { AuditEventView } from './audit-event.view';
import { AUDIT_EVENTS_READ } from './audit-events.listing';
import { AuditEventsRepository } from './audit-events.repository';
import { ListAuditEventsQueryDto } from './list-audit-events-query.dto';

@Controller({ path: 'audit_events', version: '1' })
export class AuditEventsController {
  constructor(
    private readonly pager: ListingPager,
    private readonly events: AuditEventsRepository,
  ) {}

  @Get()
  @RequireScopes(AUDIT_EVENTS_READ)
  @ApiListing(AuditEventView, { summary: 'List audit events', envelopeName: 'AuditEventPage' })
  list(
    @Query() query: ListAuditEventsQueryDto,
    @CurrentPrincipal() principal: Principal,
    @ListingFormat() format: ListingFormat,
  ): Promise<Page<AuditEventView> | ListingExport> {
    return this.pager.list(this.events, query, principal, format);
  }
}
