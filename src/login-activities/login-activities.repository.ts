import { Injectable } from '@nestjs/common';
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

  protected readonly itemQuery = {
    select: [
      'x.id AS id',
      'x.user_email AS user_email',
      'x.authentication_method AS authentication_method',
      'x.oauth_provider AS oauth_provider',
      'x.ip_address AS ip_address',
      'x.otp_required AS otp_required',
      'x.success AS success',
      'x.failure_reason AS failure_reason',
      'x.user_agent AS user_agent',
      'x.created_at AS created_at',
      'x.user_id AS user_id',
      'x.session_id AS session_id',
    ],
  };

  protected toItem(row: Record<string, unknown>): LoginActivityView {
    return {
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
    };
  }
}
