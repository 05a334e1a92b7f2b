import { defineScope } from '../common/auth/scope-registry';
import { defineListing } from '../common/listing/listing-filter.decorator';
import { ListUsersQueryDto } from './dto/list-users-query.dto';

export const USERS_READ = defineScope('users:read', 'List users (`GET /v1/users`).');

export const usersListing = defineListing(ListUsersQueryDto, {
  resource: 'users',
  table: 'users',
  organizationColumn: 'organization_id',
});
