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
    columns: [
      'id',
      'user_email',
      'authentication_method',
      'oauth_provider',
      'ip_address',
      'otp_required',
      'success',
      'failure_reason',
      'user_agent',
      'user_id',
      'session_id',
    ],
    timestamps: ['created_at'],
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
