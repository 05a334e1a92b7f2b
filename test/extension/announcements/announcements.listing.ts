import { defineScope } from '../../../src/common/auth/scope-registry';
import { defineListing } from '../../../src/common/listing/listing-filter.decorator';
import { ListAnnouncementsQueryDto } from './list-announcements-query.dto';

export const ANNOUNCEMENTS_READ = defineScope('announcements:read', 'List announcements.');

/** Rows no organization owns: every token with the scope sees them all (`organizationColumn: null`). */
export const announcementsListing = defineListing(ListAnnouncementsQueryDto, {
  resource: 'announcements',
  table: 'announcements',
  organizationColumn: null,
  immutableTimestamps: ['created_at'],
  changedAt: 'updated_at',
  indexes: [
    { index: 'ix_announcements_created_at', equals: [], sort: 'created_at' },
    { index: 'ix_announcements_updated_at', equals: [], sort: 'updated_at' },
  ],
});
