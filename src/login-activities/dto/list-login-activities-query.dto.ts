import { Filter } from '../../common/listing/listing-filter.decorator';
import { ListingQueryDto } from '../../common/listing/listing-query.dto';
import {
  BooleanParam,
  EmailParam,
  EnumParam,
  IdParam,
  IpAddressParam,
  StringParam,
  TimestampParam,
} from '../../common/validation/query-params';
import { AUTHENTICATION_METHODS, FAILURE_REASONS, OAUTH_PROVIDERS } from '../login-activity.values';

export class ListLoginActivitiesQueryDto extends ListingQueryDto({
  sortableColumns: ['created_at'],
}) {
  @Filter('equals')
  @IdParam('Only attempts by this user.')
  user_id?: number;

  @Filter('equals')
  @EmailParam('Only attempts made with this e-mail (exact, case-insensitive).')
  user_email?: string;

  @Filter('equals')
  @BooleanParam('Only successful (`true`) or failed (`false`) attempts.')
  success?: boolean;

  @Filter('equals')
  @EnumParam(AUTHENTICATION_METHODS, 'Only attempts with this authentication method.')
  authentication_method?: string;

  @Filter('equals')
  @EnumParam(OAUTH_PROVIDERS, 'Only OAuth attempts through this provider.')
  oauth_provider?: string;

  @Filter('equals')
  @EnumParam(FAILURE_REASONS, 'Only failed attempts with this reason.')
  failure_reason?: string;

  @Filter('equals')
  @IpAddressParam('Only attempts from this IP address (IPv4 or IPv6 text form, an IPv6 zone too).')
  ip_address?: string;

  // A session id is an opaque token: matched byte for byte, not in the column's collation.
  @Filter('equals', 'session_id', { exact: true })
  @StringParam({ maxLength: 128, description: 'Only attempts that opened this session (exact).' })
  session_id?: string;

  @Filter('equals')
  @BooleanParam('Only attempts where a one-time password was (`true`) or was not demanded.')
  otp_required?: boolean;

  @Filter('from', 'created_at')
  @TimestampParam('Attempts at or after this instant (inclusive).')
  created_from?: Date;

  @Filter('to', 'created_at')
  @TimestampParam('Attempts before this instant (exclusive).')
  created_to?: Date;
}
