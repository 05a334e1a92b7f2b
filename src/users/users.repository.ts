import { Injectable } from '@nestjs/common';
import { ListingRepository } from '../common/listing/listing.repository';
import { toInteger, toIsoTimestamp } from '../database/row-values';
import type { UserView } from './dto/user.view';
import { usersListing } from './users.listing';

@Injectable()
export class UsersRepository extends ListingRepository<UserView> {
  readonly definition = usersListing;

  protected readonly itemQuery = {
    columns: ['id', 'name', 'email', 'role_id', 'organization_id'],
    timestamps: ['created_at', 'updated_at'],
    lookups: [
      { name: 'role_name', table: 'roles', column: 'name', key: 'role_id' },
      { name: 'organization_name', table: 'organizations', column: 'name', key: 'organization_id' },
    ],
  };

  protected toItem(row: Record<string, unknown>): UserView {
    return {
      id: toInteger(row.id),
      name: String(row.name),
      email: String(row.email),
      role_id: toInteger(row.role_id),
      role_name: String(row.role_name),
      organization_id: toInteger(row.organization_id),
      organization_name: String(row.organization_name),
      created_at: toIsoTimestamp(row.created_at),
      updated_at: toIsoTimestamp(row.updated_at),
    };
  }
}
