import { defineScope } from '../common/auth/scope-registry';
import { defineListing } from '../common/listing/listing-filter.decorator';
import type { IndexPath } from '../common/listing/listing-definition';
import { ListLoginActivitiesQueryDto } from './dto/list-login-activities-query.dto';

export const LOGIN_ACTIVITIES_READ = defineScope(
  'login_activities:read',
  'List login activity (`GET /v1/login_activities`).',
);

/** The log's few-valued columns: many rows share each value. */
const OUTCOME_COLUMNS = [
  'success',
  'otp_required',
  'authentication_method',
  'oauth_provider',
  'failure_reason',
];

export const loginActivitiesListing = defineListing(ListLoginActivitiesQueryDto, {
  resource: 'login_activities',
  table: 'login_activities',
  organizationColumn: 'organization_id',
  immutableTimestamps: ['created_at'],
  rollup: { columns: OUTCOME_COLUMNS, time: 'created_at' },
  indexes: [
    { index: 'ix_login_activities_created_at', equals: [], sort: 'created_at' },
    // One user's, one e-mail's, one address's or one session's attempts are few: the other
    // filters are checked row by row. A session is opened by one attempt: `id` order only.
    // Declared before the organization's, which are bounded too but hold more rows: on a tie the
    // first declared path serves.
    ...['user_id', 'user_email', 'ip_address'].flatMap((column) =>
      ['id', 'created_at'].map((sort) => byColumn(column, sort, true)),
    ),
    byColumn('session_id', 'id', true),
    // An organization's log (tens of thousands of rows): its indexes carry the few-valued columns
    // (the migration's OUTCOME_COLUMNS), which are checked there without reading a row.
    ...['id', 'created_at'].map((sort) => ({
      ...byColumn('organization_id', sort, false),
      covers: [...OUTCOME_COLUMNS, ...(sort === 'id' ? ['created_at'] : [])],
    })),
    ...[
      'success',
      'otp_required',
      'authentication_method',
      'oauth_provider',
      'failure_reason',
    ].flatMap((column) => ['id', 'created_at'].map((sort) => byColumn(column, sort, false))),
  ],
});

/** The index `(column, sort…, id)` as the migrations name it. */
function byColumn(column: string, sort: string, bounded: boolean): IndexPath {
  const name = column === 'organization_id' ? 'org' : column;
  return {
    index: `ix_login_activities_${name}${sort === 'id' && column !== 'organization_id' ? '' : `_${sort}`}`,
    equals: [column],
    sort,
    ...(bounded ? { bounded: true as const } : {}),
  };
}
