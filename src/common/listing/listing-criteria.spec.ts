import type { Principal } from '../auth/principal';
import { loginActivitiesListing } from '../../login-activities/login-activities.listing';
import { buildCriteria, criteriaKey, walkBinding } from './listing-criteria';
import type { ListingDefinition } from './listing-definition';
import type { ListingQuery } from './listing-query.dto';

describe('buildCriteria', () => {
  const platform: Principal = {
    tokenId: 1,
    tokenName: 't',
    scopes: new Set(),
    organizationId: null,
  };

  it.each([
    [0, -1],
    [3_600_000, 3_599_999],
    [-1000, -1001],
  ])('bounds created_to=%d ms (exclusive) at the instant before it, the epoch too', (at, to) => {
    const query = { sort: 'id', created_to: new Date(at) } as unknown as ListingQuery;
    const { conditions } = buildCriteria(loginActivitiesListing, query, platform);
    expect(conditions.map((condition) => condition.between)).toEqual([{ to }]);
  });
});

describe('walkBinding', () => {
  const scoped = (organizationId: number | null): Principal => ({
    tokenId: 1,
    tokenName: 't',
    scopes: new Set(),
    organizationId,
  });
  const query = (values: Record<string, unknown>) =>
    ({ sort: 'id', ...values }) as unknown as ListingQuery;

  it('binds the values, sort and scope, not the SQL a release may read them with', () => {
    const sessions = query({ session_id: 'sess_1', created_from: new Date(0) });
    const collated: ListingDefinition = {
      ...loginActivitiesListing,
      filters: {
        ...loginActivitiesListing.filters,
        session_id: { ...loginActivitiesListing.filters.session_id, exact: false },
      },
    };
    const keyOf = (definition: ListingDefinition) =>
      criteriaKey('login_activities', buildCriteria(definition, sessions, scoped(null)));
    expect(keyOf(collated)).not.toBe(keyOf(loginActivitiesListing));
    expect(walkBinding(collated, sessions, scoped(null))).toBe(
      walkBinding(loginActivitiesListing, sessions, scoped(null)),
    );
    const bindings = [
      walkBinding(loginActivitiesListing, sessions, scoped(null)),
      walkBinding(loginActivitiesListing, sessions, scoped(2)),
      walkBinding(loginActivitiesListing, query({ session_id: 'sess_2' }), scoped(null)),
      walkBinding(loginActivitiesListing, { ...sessions, sort: '-id' }, scoped(null)),
      walkBinding(
        loginActivitiesListing,
        query({ session_id: 'sess_1', after_id: 5 }),
        scoped(null),
      ),
    ];
    expect(new Set(bindings).size).toBe(bindings.length);
  });
});
