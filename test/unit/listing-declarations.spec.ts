import { DECORATORS } from '@nestjs/swagger/dist/constants';
import type { ListingDefinition } from '../../src/common/listing/listing-definition';
import { ListLoginActivitiesQueryDto } from '../../src/login-activities/dto/list-login-activities-query.dto';
import { loginActivitiesListing } from '../../src/login-activities/login-activities.listing';
import { ListUsersQueryDto } from '../../src/users/dto/list-users-query.dto';
import { usersListing } from '../../src/users/users.listing';

/** The parameters every listing shares (ListingQueryDto). */
const SHARED = ['page', 'limit', 'sort', 'after_id', 'before_id', 'cursor'];

/** The documented (and validated) query parameters of a DTO class. */
function parametersOf(dto: abstract new () => unknown): string[] {
  const names: string[] = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, dto.prototype);
  return names.map((name) => name.replace(/^:/, ''));
}

describe.each([
  ['users', usersListing, ListUsersQueryDto],
  ['login_activities', loginActivitiesListing, ListLoginActivitiesQueryDto],
] as const)('%s listing declaration', (_name, definition: ListingDefinition, dto) => {
  it('declares a filter for every filter parameter of its DTO, and no other', () => {
    const filters = parametersOf(dto).filter((name) => !SHARED.includes(name));
    expect(filters.sort()).toEqual(Object.keys(definition.filters).sort());
  });

  it('shares page, limit, sort and the keyset bounds through ListingQueryDto', () => {
    expect(parametersOf(dto)).toEqual(expect.arrayContaining(SHARED));
  });
});
