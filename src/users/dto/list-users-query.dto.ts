import { Filter } from '../../common/listing/listing-filter.decorator';
import { ListingQueryDto } from '../../common/listing/listing-query.dto';
import {
  EmailParam,
  IdParam,
  StringParam,
  TimestampParam,
} from '../../common/validation/query-params';

export class ListUsersQueryDto extends ListingQueryDto({
  sortableColumns: ['created_at', 'updated_at', 'name', 'email'],
}) {
  @Filter('equals')
  @IdParam('Only users of this organization.')
  organization_id?: number;

  @Filter('equals')
  @IdParam('Only users with this role.')
  role_id?: number;

  @Filter('equals')
  @EmailParam('Exact e-mail address, case-insensitive.')
  email?: string;

  // Most e-mails start as their names do: of those, `q` reads one column's matches only.
  @Filter('prefix', ['name', 'email'], {
    shared: {
      column: 'name_email_shared',
      // As migration 1764374400000 counts them.
      most: 8,
      indexes: { name: 'ix_users_name_unshared', email: 'ix_users_email_unshared' },
    },
  })
  @StringParam({
    minLength: 2,
    maxLength: 100,
    description:
      'Users whose name or e-mail starts with this text (case-insensitive; `%`, `_` and `!` match ' +
      'themselves).',
  })
  q?: string;

  @Filter('from', 'created_at')
  @TimestampParam('Created at or after this instant (inclusive).')
  created_from?: Date;

  @Filter('to', 'created_at')
  @TimestampParam('Created before this instant (exclusive).')
  created_to?: Date;

  @Filter('from', 'updated_at')
  @TimestampParam('Updated at or after this instant (inclusive).')
  updated_from?: Date;

  @Filter('to', 'updated_at')
  @TimestampParam('Updated before this instant (exclusive).')
  updated_to?: Date;
}
