import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ListingRepository } from '../../../src/common/listing/listing.repository';
import { toInteger, toIsoTimestamp, toNullableInteger } from '../../../src/database/row-values';
import type { AuditEventView } from './audit-event.view';
import { auditEventsListing } from './audit-events.listing';

@Injectable()
export class AuditEventsRepository extends ListingRepository<AuditEventView> {
  readonly definition = auditEventsListing;

  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  /** The one query a listing writes: its items by id (paging, counting and scope are shared). */
  protected async findItemsByIds(ids: number[]): Promise<AuditEventView[]> {
    const rows = await this.dataSource
      .createQueryBuilder()
      .from('audit_events', 'e')
      .select([
        'e.id AS id',
        'e.action AS action',
        'e.actor_id AS actor_id',
        'e.created_at AS created_at',
      ])
      .where('e.id IN (:...ids)', { ids })
      .getRawMany<Record<keyof AuditEventView, unknown>>();
    return rows.map((row) => ({
      id: toInteger(row.id),
      action: String(row.action),
      actor_id: toNullableInteger(row.actor_id),
      created_at: toIsoTimestamp(row.created_at),
    }));
  }
}
