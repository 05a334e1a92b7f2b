import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ListingRepository } from '../common/listing/listing.repository';
import {
  toBoolean,
  toInteger,
  toIsoTimestamp,
  toNullableInteger,
  toNullableString,
} from '../database/row-values';
import type { LoginActivityView } from './dto/login-activity.view';
import { loginActivitiesListing } from './login-activities.listing';

@Injectable()
export class LoginActivitiesRepository extends ListingRepository<LoginActivityView> {
  readonly definition = loginActivitiesListing;

  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  protected async findItemsByIds(ids: number[]): Promise<LoginActivityView[]> {
    const rows = await this.dataSource
      .createQueryBuilder()
      .from('login_activities', 'a')
      .select([
        'a.id AS id',
        'a.user_email AS user_email',
        'a.authentication_method AS authentication_method',
        'a.oauth_provider AS oauth_provider',
        'a.ip_address AS ip_address',
        'a.otp_required AS otp_required',
        'a.success AS success',
        'a.failure_reason AS failure_reason',
        'a.user_agent AS user_agent',
        'a.created_at AS created_at',
        'a.user_id AS user_id',
        'a.session_id AS session_id',
      ])
      .where('a.id IN (:...ids)', { ids })
      .getRawMany<Record<keyof LoginActivityView, unknown>>();
    return rows.map((row) => ({
      id: toInteger(row.id),
      user_email: String(row.user_email),
      authentication_method: String(row.authentication_method),
      oauth_provider: toNullableString(row.oauth_provider),
      ip_address: String(row.ip_address),
      otp_required: toBoolean(row.otp_required),
      success: toBoolean(row.success),
      failure_reason: toNullableString(row.failure_reason),
      user_agent: toNullableString(row.user_agent),
      created_at: toIsoTimestamp(row.created_at),
      user_id: toNullableInteger(row.user_id),
      session_id: toNullableString(row.session_id),
    }));
  }
}
