import { defineScope } from '../../../src/common/auth/scope-registry';
import { defineListing } from '../../../src/common/listing/listing-filter.decorator';
import { ListAuditEventsQueryDto } from './list-audit-events-query.dto';

/** The module's own scope: registering it here is all tokens need to be issued with it. */
export const AUDIT_EVENTS_READ = defineScope('audit_events:read', 'List audit events.');

export const auditEventsListing = defineListing(ListAuditEventsQueryDto, {
  resource: 'audit_events',
  table: 'audit_events',
  organizationColumn: 'organization_id',
  immutableTimestamps: ['created_at'],
  indexes: [
    { index: 'ix_audit_events_created_at', equals: [], sort: 'created_at' },
    { index: 'ix_audit_events_org_id', equals: ['organization_id'], sort: 'id', bounded: true },
    { index: 'ix_audit_events_actor_id', equals: ['actor_id'], sort: 'id', bounded: true },
    { index: 'ix_audit_events_action', equals: ['action'], sort: 'id' },
    { index: 'ix_audit_events_group', equals: ['group'], sort: 'id' },
    { index: 'ix_audit_events_group', equals: [], sort: 'group' },
  ],
});
