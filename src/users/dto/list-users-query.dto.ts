import { ListingQueryDto } from '../../common/listing/listing-query.dto';
import { IdParam, StringParam, TimestampParam } from '../../common/validation/query-params';
import { usersListing } from '../users.listing';

export class ListUsersQueryDto extends ListingQueryDto(usersListing) {
  @IdParam('Only users of this organization.')
  organization_id?: number;

  @IdParam('Only users with this role.')
  role_id?: number;

  @StringParam({ maxLength: 320, description: 'Exact e-mail address, case-insensitive.' })
  email?: string;

  @StringParam({
    minLength: 2,
    maxLength: 100,
    description:
      'Users whose name or e-mail starts with this text (case-insensitive; `%`, `_` and `!` match ' +
      'themselves). A prefix, not a substring, so that the name and e-mail indexes serve it.',
  })
  q?: string;

  @TimestampParam('Created at or after this instant (inclusive).')
  created_from?: Date;

  @TimestampParam('Created before this instant (exclusive).')
  created_to?: Date;

  @TimestampParam('Updated at or after this instant (inclusive).')
  updated_from?: Date;

  @TimestampParam('Updated before this instant (exclusive).')
  updated_to?: Date;
}
