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
 * Every documented filter alone and in pairs, with every documented sort, platform-wide and under
 * an organization scope: each is answered 200 and, by export, by following `next` and by its last
 * numbered page (and by keyset for id sorts), with exactly the rows the database itself returns
 * for the same conditions in the same order (a plain statement, no index named).
 */
describe('every documented filter × sort is answered with the database’s rows', () => {
  let app: QueryApp;

  beforeAll(async () => {
    app = await startQueryApp(
      { COUNT_CACHE_WARMUP: 'false' },
      { users: 240, activities: 1200, organizations: 4 },
    );
  }, 120_000);

  afterAll(() => app.kit.close());

  async function activityFilters(): Promise<FilterCase[]> {
    const [row] = await app.kit.dataSource.query<Record<string, unknown>[]>(
      'SELECT user_id, user_email, ip_address, session_id FROM login_activities WHERE success = 1 AND user_id IS NOT NULL ORDER BY id LIMIT 1 OFFSET 7',
    );
    return [
      equals('user_id', Number(row.user_id)),
      // Another case than stored: the filter is case-insensitive.
      { ...equals('user_email', String(row.user_email).toUpperCase()) },
      equals('success', false),
      equals('authentication_method', 'oauth'),
      equals('oauth_provider', 'google'),
      equals('failure_reason', 'invalid_credentials'),
      equals('ip_address', String(row.ip_address)),
      equals('session_id', String(row.session_id)),
      equals('otp_required', true),
      range('created_from', await app.timeAt('login_activities', 0.3), 'created_at', '>='),
      range('created_to', await app.timeAt('login_activities', 0.8), 'created_at', '<'),
    ];
  }

  async function userFilters(): Promise<FilterCase[]> {
    const [row] = await app.kit.dataSource.query<Record<string, unknown>[]>(
      'SELECT role_id, email, name FROM users ORDER BY id LIMIT 1 OFFSET 11',
    );
    const q = String(row.name).slice(0, 2).toLowerCase();
    return [
      equals('organization_id', app.organizationId),
      equals('role_id', Number(row.role_id)),
      equals('email', String(row.email).toUpperCase()),
      prefixFilter(q),
      range('created_from', await app.timeAt('users', 0.2), 'created_at', '>='),
      range('created_to', await app.timeAt('users', 0.9), 'created_at', '<'),
      range('updated_from', await app.timeAt('users', 0.1), 'updated_at', '>='),
      range('updated_to', await app.timeAt('users', 0.7), 'updated_at', '<'),
    ];
  }

  /** What the API answers for the query, each way it can be read. */
  async function answers(path: string, expected: number[], sort: string, scoped: boolean) {
    const problems: string[] = [];
    const limit = Math.min(100, Math.max(3, Math.ceil(expected.length / 4)));
    // Following `next` from page 1.
    const walked: number[] = [];
    let response = await app.get(`${path}&limit=${limit}`, scoped);
    if (response.status !== 200)
      return [`${path}: ${response.status} ${JSON.stringify(response.body)}`];
    if (response.headers['x-total-count'] !== String(expected.length)) {
      problems.push(`${path}: X-Total-Count ${response.headers['x-total-count']}`);
    }
    for (let step = 0; step <= expected.length / limit + 1; step++) {
      const page = pageIds(response.body);
      walked.push(...page);
      const next = parseLinks(response.headers.link).next;
      if (!next || page.length === 0) break;
      response = await app.get(next, scoped);
      if (response.status !== 200) return [`${next}: ${response.status}`];
    }
    if (JSON.stringify(walked) !== JSON.stringify(expected)) problems.push(`${path}: next walk`);
    // The last numbered page, read from the far end.
    const pages = Math.ceil(expected.length / limit);
    if (pages > 1) {
      const last = await app.get(`${path}&limit=${limit}&page=${pages}`, scoped);
      const want = expected.slice((pages - 1) * limit);
      if (last.status !== 200 || JSON.stringify(pageIds(last.body)) !== JSON.stringify(want)) {
        problems.push(`${path}: last page`);
      }
    }
    // The export.
    const exported = await app.exported(path, scoped);
    if (exported.status !== 200 || JSON.stringify(exported.ids) !== JSON.stringify(expected)) {
      problems.push(`${path}: export`);
    }
    // A keyset step from a third of the way.
    if ((sort === 'id' || sort === '-id') && expected.length > 2) {
      const bound = expected[Math.floor(expected.length / 3)];
      const parameter = sort === 'id' ? 'after_id' : 'before_id';
      const keyset = await app.get(`${path}&${parameter}=${bound}&limit=100`, scoped);
      const want = expected.slice(Math.floor(expected.length / 3) + 1).slice(0, 100);
      if (keyset.status !== 200 || JSON.stringify(pageIds(keyset.body)) !== JSON.stringify(want)) {
        problems.push(`${path}: ${parameter}`);
      }
    }
    return problems;
  }

  async function everyQuery(
    resource: string,
    table: string,
    filters: FilterCase[],
    sorts: string[],
  ): Promise<{ asked: number; problems: string[]; nonEmpty: number }> {
    const combinations: FilterCase[][] = [[], ...filters.map((f) => [f])];
    for (let i = 0; i < filters.length; i++) {
      for (let j = i + 1; j < filters.length; j++) combinations.push([filters[i], filters[j]]);
    }
    const problems: string[] = [];
    let asked = 0;
    let nonEmpty = 0;
    for (const combination of combinations) {
      for (const sort of sorts) {
        // Under a scope: each filter alone, with every sort.
        for (const scoped of combination.length < 2 ? [false, true] : [false]) {
          const query = new URLSearchParams([
            ...combination.map((f): [string, string] => [f.parameter, f.value]),
            ['sort', sort],
          ]);
          const expected = await app.reference(table, combination, sort, scoped);
          if (expected.length) nonEmpty++;
          const path = `/v1/${resource}?${query.toString()}`;
          problems.push(
            ...(await answers(path, expected, sort, scoped)).map(
              (p) => `${p}${scoped ? ' (scoped)' : ''}`,
            ),
          );
          asked++;
        }
      }
    }
    return { asked, problems, nonEmpty };
  }

  it('login activities: every filter alone and in pairs, with every sort', async () => {
    const sorts = ['id', '-id', 'created_at', '-created_at'];
    const result = await everyQuery(
      'login_activities',
      'login_activities',
      await activityFilters(),
      sorts,
    );
    expect(result.problems).toEqual([]);
    // 1 + 11 filters alone (each also scoped) + 55 pairs, each with 4 sorts.
    expect(result.asked).toBe((1 + 11) * 2 * 4 + 55 * 4);
    expect(result.nonEmpty).toBeGreaterThan(result.asked / 2);
  }, 600_000);

  it('users: every filter alone and in pairs, with every sort', async () => {
    const sorts = ['id', 'created_at', 'updated_at', 'name', 'email'].flatMap((s) => [s, `-${s}`]);
    const result = await everyQuery('users', 'users', await userFilters(), sorts);
    expect(result.problems).toEqual([]);
    expect(result.asked).toBe((1 + 8) * 2 * 10 + 28 * 10);
    expect(result.nonEmpty).toBeGreaterThan(result.asked / 2);
  }, 600_000);
});
