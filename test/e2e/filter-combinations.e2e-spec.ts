import { SeededRandom } from '../../src/database/seed/random';
import {
  equalsFilter as equals,
  FilterCase,
  pageIds,
  parseLinks,
  prefixFilter,
  rangeFilter as range,
  QueryApp,
  startQueryApp,
} from '../kit';

/**
 * Three and four documented filters at once, drawn at random (seeded), with any sort and scope:
 * every way of reading them (numbered pages anywhere, `next`, keyset, export) gives exactly the
 * database's rows. Deep pages are positioned from the totals' histograms and the rollup here
 * (DEEP_PAGE_ROWS=10), once those are counted: each middle page is asked again after that.
 */
describe('any combination of filters is answered with the database’s rows', () => {
  let app: QueryApp;

  beforeAll(async () => {
    app = await startQueryApp(
      { DEEP_PAGE_ROWS: '10' },
      { users: 400, activities: 4000, organizations: 3 },
    );
  }, 120_000);

  afterAll(() => app.kit.close());

  /** Each filter's candidate values: a few taken from rows, so that combinations match some. */
  async function activityFilters(random: SeededRandom): Promise<FilterCase[][]> {
    const rows = await app.kit.dataSource.query<Record<string, unknown>[]>(
      'SELECT user_id, user_email, ip_address, session_id FROM login_activities WHERE user_id IS NOT NULL ORDER BY id LIMIT 5 OFFSET 40',
    );
    const times = await Promise.all(
      [0.1, 0.4, 0.6, 0.95].map((share) => app.timeAt('login_activities', share)),
    );
    const row = () => random.pick(rows);
    return [
      [equals('user_id', Number(row().user_id))],
      [equals('user_email', String(row().user_email).toUpperCase())],
      [equals('success', false), equals('success', true)],
      ['password', 'oauth', 'saml', 'magic_link', 'passkey'].map((m) =>
        equals('authentication_method', m),
      ),
      ['google', 'github', 'microsoft'].map((p) => equals('oauth_provider', p)),
      ['invalid_credentials', 'account_locked'].map((f) => equals('failure_reason', f)),
      [equals('ip_address', String(row().ip_address))],
      [equals('session_id', String(row().session_id))],
      [equals('otp_required', true), equals('otp_required', false)],
      times.slice(0, 3).map((t) => range('created_from', t, 'created_at', '>=')),
      times.slice(1).map((t) => range('created_to', t, 'created_at', '<')),
    ];
  }

  async function userFilters(): Promise<FilterCase[][]> {
    const rows = await app.kit.dataSource.query<Record<string, unknown>[]>(
      'SELECT role_id, email, name FROM users ORDER BY id LIMIT 5 OFFSET 11',
    );
    const at = (column: string, shares: number[]) =>
      Promise.all(shares.map((share) => app.timeAt('users', share, column)));
    const created = await at('created_at', [0.1, 0.5, 0.9]);
    const updated = await at('updated_at', [0.1, 0.5, 0.9]);
    return [
      [equals('organization_id', app.organizationId)],
      [1, 2, 3].map((role) => equals('role_id', role)),
      rows.map((r) => equals('email', String(r.email).toUpperCase())),
      rows.map((r) => prefixFilter(String(r.name).slice(0, 2).toLowerCase())),
      created.slice(0, 2).map((t) => range('created_from', t, 'created_at', '>=')),
      created.slice(1).map((t) => range('created_to', t, 'created_at', '<')),
      updated.slice(0, 2).map((t) => range('updated_from', t, 'updated_at', '>=')),
      updated.slice(1).map((t) => range('updated_to', t, 'updated_at', '<')),
    ];
  }

  const same = (a: number[], b: number[]) => JSON.stringify(a) === JSON.stringify(b);

  async function answers(
    path: string,
    expected: number[],
    sort: string,
    scoped: boolean,
    random: SeededRandom,
    again: (check: () => Promise<void>) => void,
  ): Promise<string[]> {
    const problems: string[] = [];
    const limit = random.pick([1, 3, 7, 20, 100]);
    const pages = Math.max(1, Math.ceil(expected.length / limit));
    const pageAt = async (n: number) => {
      const response = await app.get(`${path}&limit=${limit}&page=${n}`, scoped);
      const want = expected.slice((n - 1) * limit, n * limit);
      if (response.status !== 200) problems.push(`${path} page ${n}: ${response.status}`);
      else if (!same(pageIds(response.body), want))
        problems.push(`${path}&limit=${limit}&page=${n}`);
      else if (response.headers['x-total-count'] !== String(expected.length)) {
        problems.push(`${path} page ${n}: X-Total-Count ${response.headers['x-total-count']}`);
      }
      return response;
    };
    const middle = Math.ceil(pages / 2);
    const deep = random.int(1, pages);
    for (const n of new Set([1, middle, deep, pages])) await pageAt(n);
    again(async () => {
      for (const n of new Set([middle, deep])) await pageAt(n);
    });
    // Five steps of `next` from a page, and from page 1.
    for (const start of new Set([1, deep])) {
      let response = await app.get(`${path}&limit=${limit}&page=${start}`, scoped);
      const walked: number[] = [];
      for (let step = 0; step < 6 && response.status === 200; step++) {
        walked.push(...pageIds(response.body));
        const next = parseLinks(response.headers.link).next;
        if (!next) break;
        response = await app.get(next, scoped);
      }
      const from = (start - 1) * limit;
      if (response.status !== 200) problems.push(`${path} next from ${start}: ${response.status}`);
      else if (!same(walked, expected.slice(from, from + walked.length)) || !walked.length) {
        if (walked.length || expected.length > from) problems.push(`${path} next from ${start}`);
      }
    }
    const exported = await app.exported(path, scoped);
    if (exported.status !== 200 || !same(exported.ids, expected)) problems.push(`${path}: export`);
    if ((sort === 'id' || sort === '-id') && expected.length > 2) {
      const at = random.int(0, expected.length - 1);
      const parameter = sort === 'id' ? 'after_id' : 'before_id';
      const keyset = await app.get(`${path}&${parameter}=${expected[at]}&limit=${limit}`, scoped);
      const want = expected.slice(at + 1, at + 1 + limit);
      if (keyset.status !== 200 || !same(pageIds(keyset.body), want)) {
        problems.push(`${path}&${parameter}=${expected[at]}&limit=${limit}`);
      }
    }
    return problems;
  }

  async function combinations(
    resource: string,
    filters: FilterCase[][],
    sorts: string[],
    random: SeededRandom,
    count: number,
  ) {
    const problems: string[] = [];
    const checks: (() => Promise<void>)[] = [];
    let nonEmpty = 0;
    for (let i = 0; i < count; i++) {
      const size = random.int(3, 4);
      const chosen = new Set<number>();
      // A filter with one candidate value (an address, a session) is drawn less often.
      const weights = filters.map((values, f): [number, number] => [f, values.length > 1 ? 4 : 1]);
      while (chosen.size < size) chosen.add(random.weighted(weights));
      const combination = [...chosen].sort((a, b) => a - b).map((f) => random.pick(filters[f]));
      const sort = random.pick(sorts);
      const scoped = random.chance(0.3);
      const query = new URLSearchParams([
        ...combination.map((f): [string, string] => [f.parameter, f.value]),
        ['sort', sort],
      ]);
      const expected = await app.reference(resource, combination, sort, scoped);
      if (expected.length) nonEmpty++;
      const path = `/v1/${resource}?${query.toString()}`;
      const tag = scoped ? ' (scoped)' : '';
      const found = await answers(path, expected, sort, scoped, random, (check) =>
        checks.push(check),
      );
      problems.push(...found.map((p) => `${p}${tag}`));
    }
    // The deep pages again, now that the background has counted their histograms.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const check of checks) await check();
    return { problems, nonEmpty };
  }

  it('login activities: 3 and 4 filters at once, with any sort', async () => {
    const random = new SeededRandom(35);
    const sorts = ['id', '-id', 'created_at', '-created_at'];
    const result = await combinations(
      'login_activities',
      await activityFilters(random),
      sorts,
      random,
      150,
    );
    expect(result.problems).toEqual([]);
    expect(result.nonEmpty).toBeGreaterThan(50);
  }, 600_000);

  it('users: 3 and 4 filters at once, with any sort', async () => {
    const random = new SeededRandom(36);
    const sorts = ['id', 'created_at', 'updated_at', 'name', 'email'].flatMap((s) => [s, `-${s}`]);
    const result = await combinations('users', await userFilters(), sorts, random, 150);
    expect(result.problems).toEqual([]);
    expect(result.nonEmpty).toBeGreaterThan(50);
  }, 600_000);
});
