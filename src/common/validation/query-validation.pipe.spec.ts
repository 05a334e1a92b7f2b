import { ProblemException } from '../problem-details/problem.exception';
import { configurePagination, ListingQueryDto } from '../listing/listing-query.dto';
import { QueryValidationPipe } from './query-validation.pipe';

const definition = {
  resource: 'things',
  table: 'things',
  organizationColumn: 'organization_id',
  sortableColumns: ['created_at'],
  filters: {},
};
class ThingsQueryDto extends ListingQueryDto(definition) {}

const pipe = new QueryValidationPipe();
const validate = (query: Record<string, unknown>) =>
  pipe.transform(query, { type: 'query', metatype: ThingsQueryDto }) as ThingsQueryDto;

function problemOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    if (error instanceof ProblemException) return error.getResponse();
    throw error;
  }
  throw new Error('expected a ProblemException');
}

describe('QueryValidationPipe, remembering validated queries', () => {
  afterEach(() => configurePagination({ defaultLimit: 20, maxLimit: 100 }));

  it('hands every call its own DTO, equal for the same query', () => {
    const first = validate({ page: '2', limit: '50', sort: '-created_at' });
    first.page = 99; // a caller changing its copy
    const second = validate({ page: '2', limit: '50', sort: '-created_at' });
    expect(second).toBeInstanceOf(ThingsQueryDto);
    expect(second).not.toBe(first);
    expect({ ...second }).toEqual({ page: 2, limit: 50, sort: '-created_at' });
  });

  it('answers a remembered bad query with the same errors each time', () => {
    const query = { page: '0', colour: 'red' };
    const first = problemOf(() => validate(query));
    const second = problemOf(() => validate(query));
    expect(second).toEqual(first);
    expect(JSON.stringify(second)).toContain('colour');
  });

  it('follows a change of the page size bound (configurePagination)', () => {
    expect(validate({ limit: '80' }).limit).toBe(80);
    configurePagination({ defaultLimit: 20, maxLimit: 50 });
    expect(JSON.stringify(problemOf(() => validate({ limit: '80' })))).toContain(
      'between 1 and 50',
    );
  });
});
