import { defineScope } from '../common/auth/scope-registry';
import { defineListing } from '../common/listing/listing-filter.decorator';
import { ListUsersQueryDto } from './dto/list-users-query.dto';

export const USERS_READ = defineScope('users:read', 'List users (`GET /v1/users`).');

/** The filtered columns the covering indexes of migration 1764201600000 carry. */
const COVERED = ['created_at', 'updated_at', 'role_id', 'name', 'email'];

export const usersListing = defineListing(ListUsersQueryDto, {
  resource: 'users',
  table: 'users',
  organizationColumn: 'organization_id',
  immutableTimestamps: ['created_at'],
  changedAt: 'updated_at',
  // A handful of roles: any role's total, window and deep page in creation order from memory.
  rollup: { columns: ['role_id'], time: 'created_at' },
  indexes: [
    { index: 'uq_users_email', equals: ['email'], sort: 'email', unique: true },
    { index: 'uq_users_email', equals: [], sort: 'email', uniqueSort: true },
    { index: 'ix_users_created_at', equals: [], sort: 'created_at' },
    { index: 'ix_users_updated_at', equals: [], sort: 'updated_at' },
    { index: 'ix_users_name', equals: [], sort: 'name' },
    // An organization's users are few enough to check the other filters row by row.
    ...(['id', 'created_at', 'updated_at', 'name', 'email'] as const).map((sort) => ({
      index: `ix_users_org_${sort}`,
      equals: ['organization_id'],
      sort,
      bounded: true as const,
    })),
    { index: 'ix_users_role_id', equals: ['role_id'], sort: 'id' },
    // A role's users in the order they change (its other orders: the rollup and marks position them).
    { index: 'ix_users_role_updated_at', equals: ['role_id'], sort: 'updated_at' },
    // The same orders carrying every other filtered column (the migration's covering indexes):
    // any filter set is checked there, and a window's matches sorted, without reading a row.
    ...(['created_at', 'updated_at', 'name', 'email'] as const).map((sort) => ({
      index: `ix_users_${sort}_cover`,
      equals: [],
      sort,
      covers: COVERED.filter((column) => column !== sort),
    })),
    // `q`: the union of a name prefix's and an e-mail prefix's ranges, read and sorted, each
    // from an index that carries the other filters and sorts.
    {
      index: 'ix_users_name_cover,ix_users_email_cover',
      equals: [],
      sort: '(name or email)',
      covers: COVERED,
    },
  ],
});
