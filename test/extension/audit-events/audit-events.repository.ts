import { Injectable } from '@nestjs/common';
import { ListingRepository } from '../../../src/common/listing/listing.repository';
import { toInteger, toIsoTimestamp, toNullableInteger } from '../../../src/database/row-values';
import type { AuditEventView } from './audit-event.view';
import { auditEventsListing } from './audit-events.listing';

@Injectable()
export class AuditEventsRepository extends ListingRepository<AuditEventView> {
  readonly definition = auditEventsListing;

  /** The one query a listing writes: its columns (paging, counting and scope are shared). */
  protected readonly itemQuery = {
    columns: ['id', 'action', 'group', 'actor_id'],
    timestamps: ['created_at'],
  };

  protected toItem(row: Record<string, unknown>): AuditEventView {
    return {
      id: toInteger(row.id),
      action: String(row.action),
      group: String(row.group),
      actor_id: toNullableInteger(row.actor_id),
      created_at: toIsoTimestamp(row.created_at),
    };
  }
}
