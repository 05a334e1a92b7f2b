import { defineScope } from '../../../src/common/auth/scope-registry';
import type { ListingDefinition } from '../../../src/common/listing/listing-definition';

/** The module's own scope: registering it here is all tokens need to be issued with it. */
export const AUDIT_EVENTS_READ = defineScope('audit_events:read', 'List audit events.');

export const AUDIT_ACTIONS = ['sign_in', 'role_changed', 'token_created', 'export'] as const;

export const auditEventsListing: ListingDefinition = {
  resource: 'audit_events',
  table: 'audit_events',
  organizationColumn: 'organization_id',
  sortableColumns: ['created_at'],
  filters: {
    action: { operator: 'equals', column: 'action' },
    actor_id: { operator: 'equals', column: 'actor_id' },
    created_from: { operator: 'from', column: 'created_at' },
    created_to: { operator: 'to', column: 'created_at' },
  },
};
