import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ListingRepository } from '../common/listing/listing.repository';
import { toInteger, toIsoTimestamp } from '../database/row-values';
import type { UserView } from './dto/user.view';
import { usersListing } from './users.listing';

@Injectable()
export class UsersRepository extends ListingRepository<UserView> {
  readonly definition = usersListing;

  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  protected async findItemsByIds(ids: number[]): Promise<UserView[]> {
    const rows = await this.dataSource
      .createQueryBuilder()
      .from('users', 'u')
      .innerJoin('roles', 'r', 'r.id = u.role_id')
      .innerJoin('organizations', 'o', 'o.id = u.organization_id')
      .select([
        'u.id AS id',
        'u.name AS name',
        'u.email AS email',
        'u.role_id AS role_id',
        'r.name AS role_name',
        'u.organization_id AS organization_id',
        'o.name AS organization_name',
        'u.created_at AS created_at',
        'u.updated_at AS updated_at',
      ])
      .where('u.id IN (:...ids)', { ids })
      .getRawMany<Record<keyof UserView, unknown>>();
    return rows.map((row) => ({
      id: toInteger(row.id),
      name: String(row.name),
      email: String(row.email),
      role_id: toInteger(row.role_id),
      role_name: String(row.role_name),
      organization_id: toInteger(row.organization_id),
      organization_name: String(row.organization_name),
      created_at: toIsoTimestamp(row.created_at),
      updated_at: toIsoTimestamp(row.updated_at),
    }));
  }
}
