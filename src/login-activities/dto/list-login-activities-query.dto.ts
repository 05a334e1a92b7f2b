import { ListingQueryDto } from '../../common/listing/listing-query.dto';
import {
  BooleanParam,
  EnumParam,
  IdParam,
  StringParam,
  TimestampParam,
} from '../../common/validation/query-params';
import {
  AUTHENTICATION_METHODS,
  FAILURE_REASONS,
  loginActivitiesListing,
  OAUTH_PROVIDERS,
} from '../login-activities.listing';

export class ListLoginActivitiesQueryDto extends ListingQueryDto(loginActivitiesListing) {
  @IdParam('Only attempts by this user.')
  user_id?: number;

  @StringParam({
    maxLength: 320,
    description: 'Only attempts made with this e-mail (exact, case-insensitive).',
  })
  user_email?: string;

  @BooleanParam('Only successful (`true`) or failed (`false`) attempts.')
  success?: boolean;

  @EnumParam(AUTHENTICATION_METHODS, 'Only attempts with this authentication method.')
  authentication_method?: string;

  @EnumParam(OAUTH_PROVIDERS, 'Only OAuth attempts through this provider.')
  oauth_provider?: string;

  @EnumParam(FAILURE_REASONS, 'Only failed attempts with this reason.')
  failure_reason?: string;

  @StringParam({
    maxLength: 45,
    pattern: /^[0-9A-Fa-f.:]+$/,
    patternMessage: 'must be an IPv4 or IPv6 address',
    description: 'Only attempts from this IP address (IPv4 or IPv6 text form).',
  })
  ip_address?: string;

  @StringParam({ maxLength: 128, description: 'Only attempts that opened this session.' })
  session_id?: string;

  @BooleanParam('Only attempts where a one-time password was (`true`) or was not demanded.')
  otp_required?: boolean;

  @TimestampParam('Attempts at or after this instant (inclusive).')
  created_from?: Date;

  @TimestampParam('Attempts before this instant (exclusive).')
  created_to?: Date;
}
