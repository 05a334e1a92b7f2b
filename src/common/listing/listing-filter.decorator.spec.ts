import { IdParam, StringParam, TimestampParam } from '../validation/query-params';
import { defineListing, Filter, filtersOf } from './listing-filter.decorator';
import { ListingQueryDto } from './listing-query.dto';

class ThingsQueryDto extends ListingQueryDto({ sortableColumns: ['created_at', 'name'] }) {
  @Filter('equals')
  @IdParam()
  owner_id?: number;

  @Filter('prefix', 'name')
  @StringParam({ maxLength: 50 })
  q?: string;

  @Filter('from', 'created_at')
  @TimestampParam()
  created_from?: Date;

  // Validated, but no filter: the listing leaves it alone.
  @StringParam({ maxLength: 5 })
  note?: string;
}

class MoreThingsQueryDto extends ThingsQueryDto {
  @Filter('to', 'created_at')
  @TimestampParam()
  created_to?: Date;
}

describe('@Filter and defineListing', () => {
  it('derive the definition from the query DTO: its filters and sortable columns', () => {
    expect(
      defineListing(ThingsQueryDto, {
        resource: 'things',
        table: 'things',
        organizationColumn: 'organization_id',
        indexes: [{ index: 'ix_things_name', equals: [], sort: 'name' }],
      }),
    ).toEqual({
      resource: 'things',
      table: 'things',
      organizationColumn: 'organization_id',
      sortableColumns: ['created_at', 'name'],
      indexes: [{ index: 'ix_things_name', equals: [], sort: 'name' }],
      filters: {
        owner_id: { operator: 'equals', column: 'owner_id' },
        q: { operator: 'prefix', column: 'name' },
        created_from: { operator: 'from', column: 'created_at' },
      },
    });
  });

  it('inherits the filters of a parent DTO without adding to it', () => {
    expect(Object.keys(filtersOf(MoreThingsQueryDto))).toEqual([
      'owner_id',
      'q',
      'created_from',
      'created_to',
    ]);
    expect(filtersOf(ThingsQueryDto)).not.toHaveProperty('created_to');
  });
});
