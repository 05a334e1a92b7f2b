import { defineScope } from '../../../src/common/auth/scope-registry';
import { defineListing } from '../../../src/common/listing/listing-filter.decorator';
import { ListAuditEventsQueryDto } from './list-audit-events-query.dto';

/** The module's own scope: registering it here is all tokens need to be issued with it. */
export const AUDIT_EVENTS_READ = defineScope('audit_events:read', 'List audit events.');

export const auditEventsListing = defineListing(ListAuditEventsQueryDto, {
  resource: 'audit_events',
  table: 'audit_events',
  organizationColumn: 'organization_id',
});
