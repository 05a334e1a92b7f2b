import { defineScope } from '../common/auth/scope-registry';
import type { ListingDefinition } from '../common/listing/listing-definition';

export const USERS_READ = defineScope('users:read', 'List users (`GET /v1/users`).');

export const usersListing: ListingDefinition = {
  resource: 'users',
  table: 'users',
  organizationColumn: 'organization_id',
  sortableColumns: ['created_at', 'updated_at', 'name', 'email'],
  filters: {
    organization_id: { operator: 'equals', column: 'organization_id' },
    role_id: { operator: 'equals', column: 'role_id' },
    email: { operator: 'equals', column: 'email' },
    q: { operator: 'prefix', columns: ['name', 'email'] },
    created_from: { operator: 'from', column: 'created_at' },
    created_to: { operator: 'to', column: 'created_at' },
    updated_from: { operator: 'from', column: 'updated_at' },
    updated_to: { operator: 'to', column: 'updated_at' },
  },
};
