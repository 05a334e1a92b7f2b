import type { Principal } from '../auth/principal';
import { loginActivitiesListing } from '../../login-activities/login-activities.listing';
import { buildCriteria } from './listing-criteria';
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
