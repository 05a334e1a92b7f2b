import { ProblemException } from '../problem-details/problem.exception';
import { ListingQueryDto } from '../listing/listing-query.dto';
import { QueryValidationPipe } from './query-validation.pipe';

class ThingsQueryDto extends ListingQueryDto({ sortableColumns: ['created_at'] }) {}

const pipeWith = (maxLimit: number) =>
  new QueryValidationPipe({ pagination: { defaultLimit: 20, maxLimit } });
const pipe = pipeWith(100);
const validate = (query: Record<string, unknown>, through = pipe) =>
  through.transform(query, { type: 'query', metatype: ThingsQueryDto }) as Promise<ThingsQueryDto>;

async function problemOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ProblemException) return { errors: error.problem.errors };
    throw error;
  }
  throw new Error('expected a ProblemException');
}

describe('QueryValidationPipe', () => {
  it('turns the query into its DTO, with the defaults', async () => {
    const query = await validate({ page: '2', sort: '-created_at' });
    expect(query).toBeInstanceOf(ThingsQueryDto);
    // `limit` stays unset (the pager applies PAGE_LIMIT_DEFAULT): an export must know it was not given.
    expect(JSON.parse(JSON.stringify(query))).toEqual({ page: 2, sort: '-created_at' });
  });

  it('reports a repeated parameter together with the others that are wrong', async () => {
    const problem = await problemOf(() =>
      validate({ page: ['1', '2'], limit: '0', colour: 'red' }),
    );
    expect(problem).toMatchObject({
      errors: expect.arrayContaining([
        { parameter: 'page', message: 'must be given once, as a single value' },
        { parameter: 'limit', message: 'must be an integer between 1 and 100' },
        { parameter: 'colour', message: 'is not a known parameter' },
      ]),
    });
  });

  it("refuses parameters named like an object's built-in properties", async () => {
    // node:querystring (Express 5's parser) gives them as own keys of a prototype-less object.
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
    for (const name of names) {
      const query = Object.assign(Object.create(null) as Record<string, unknown>, { [name]: '1' });
      expect(await problemOf(() => validate(query))).toEqual({
        errors: [{ parameter: name, message: 'is not a known parameter' }],
      });
    }
  });

  it('refuses a repeated parameter when all else is fine', async () => {
    const problem = await problemOf(() => validate({ sort: ['id', '-id'] }));
    expect(problem).toMatchObject({
      errors: [{ parameter: 'sort', message: 'must be given once, as a single value' }],
    });
  });

  it("follows its own app's page size bound, whatever another's", async () => {
    const smaller = pipeWith(50);
    expect(await problemOf(() => validate({ limit: '80', page: '0' }, smaller))).toEqual({
      errors: [
        { parameter: 'page', message: 'must be an integer between 1 and 2147483647' },
        { parameter: 'limit', message: 'must be an integer between 1 and 50' },
      ],
    });
    expect((await validate({ limit: '80' })).limit).toBe(80);
    expect((await validate({ limit: '50' }, smaller)).limit).toBe(50);
    expect(JSON.stringify(await problemOf(() => validate({ limit: '10001' })))).toContain(
      'between 1 and 100"',
    );
  });

  it('leaves other arguments alone', async () => {
    const value = { id: ['1', '2'] };
    expect(await pipe.transform(value, { type: 'param', metatype: String })).toBe(value);
  });
});
