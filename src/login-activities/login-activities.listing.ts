import { defineScope } from '../common/auth/scope-registry';
import { defineListing } from '../common/listing/listing-filter.decorator';
import { ListLoginActivitiesQueryDto } from './dto/list-login-activities-query.dto';

export const LOGIN_ACTIVITIES_READ = defineScope(
  'login_activities:read',
  'List login activity (`GET /v1/login_activities`).',
);

export const loginActivitiesListing = defineListing(ListLoginActivitiesQueryDto, {
  resource: 'login_activities',
  table: 'login_activities',
  organizationColumn: 'organization_id',
});
