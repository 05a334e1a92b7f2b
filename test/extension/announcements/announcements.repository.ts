import { Injectable } from '@nestjs/common';
import { ListingRepository } from '../../../src/common/listing/listing.repository';
import { toInteger, toIsoTimestamp } from '../../../src/database/row-values';
import type { AnnouncementView } from './announcement.view';
import { announcementsListing } from './announcements.listing';

@Injectable()
export class AnnouncementsRepository extends ListingRepository<AnnouncementView> {
  readonly definition = announcementsListing;
  protected readonly itemQuery = {
    columns: ['id', 'title'],
    timestamps: ['created_at', 'updated_at'],
  };

  protected toItem(row: Record<string, unknown>): AnnouncementView {
    return {
      id: toInteger(row.id),
      title: String(row.title),
      created_at: toIsoTimestamp(row.created_at),
      updated_at: toIsoTimestamp(row.updated_at),
    };
  }
}
