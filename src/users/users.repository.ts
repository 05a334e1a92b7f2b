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
    select: ['r.name AS role_name', 'o.name AS organization_name'],
    joins: ['JOIN roles r ON r.id = x.role_id', 'JOIN organizations o ON o.id = x.organization_id'],
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
