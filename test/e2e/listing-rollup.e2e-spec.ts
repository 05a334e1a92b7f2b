import { seedDemoData } from '../../src/database/seed/demo-data';
import { toSqlDatetime } from '../../src/database/row-values';
import { startWarmedTestApp, TestApp, watchStatements } from '../kit';

/**
 * The login activity rollup (rows per hour for each combination of the few-valued columns): the
 * total of any combination of `success`, `otp_required`, `authentication_method`,
 * `oauth_provider` and `failure_reason`, with or without a time window, is summed from it, plus
 * the partial hours at a window's edges and the rows appended since it. No statement counts the
 * filters' rows across the table, and every total is the database's count.
 */
describe('totals of any combination of the few-valued filters, from the rollup', () => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeded) => {
        await seedDemoData(seeded.dataSource, {
          users: 60,
          activities: 3000,
          organizations: 3,
          batchSize: 500,
          now: new Date('2026-11-21T00:00:00.000Z'),
        });
        // Values a writer stored in other capitals: one combination for the filter, both databases.
        await seeded.dataSource.query(
          "UPDATE login_activities SET authentication_method = 'OAuth', oauth_provider = 'GitHub' WHERE id % 3 = 0 AND oauth_provider = 'github'",
        );
        await seeded.dataSource.query(
          "UPDATE login_activities SET failure_reason = 'Account_Locked' WHERE id % 2 = 0 AND failure_reason = 'account_locked'",
        );
      },
      {
        env: {
          TAIL_HOLDBACK_MS: '0',
          DEEP_PAGE_ROWS: '40',
          RATE_LIMIT_PER_MINUTE: '0', // every page of several walks, one token
        },
      },
    );
    token = await kit.token();
  }, 90_000);

  afterAll(async () => {
    await kit?.close();
  });

  const sql = (iso: string) => `'${iso.replace('T', ' ').replace('Z', '')}'`;
  const from = '2026-10-03T10:17:31.000Z';
  const to = '2026-11-02T03:40:00.000Z';
  const cases: [string, string][] = [
    ['success=false&otp_required=true', 'success = 0 AND otp_required = 1'],
    [
      'authentication_method=password&success=false',
      "authentication_method = 'password' AND success = 0",
    ],
    [
      'authentication_method=oauth&oauth_provider=google',
      "authentication_method = 'oauth' AND oauth_provider = 'google'",
    ],
    [
      'failure_reason=account_locked&otp_required=false',
      "failure_reason = 'account_locked' AND otp_required = 0",
    ],
    [`success=false&created_from=${from}`, `success = 0 AND created_at >= ${sql(from)}`],
    [
      `oauth_provider=github&created_from=${from}&created_to=${to}`,
      `oauth_provider = 'github' AND created_at >= ${sql(from)} AND created_at < ${sql(to)}`,
    ],
    [
      `created_from=${from}&created_to=${to}`,
      `created_at >= ${sql(from)} AND created_at < ${sql(to)}`,
    ],
  ];

  /**
   * The counts among `statements` other than of the rows appended since the rollup (ids above it)
   * and of a window's partial hours: none may count across the table.
   */
  const countsAcrossTable = (statements: string[]) =>
    statements.filter(
      (s) =>
        /^SELECT COUNT\(\*\)/.test(s) &&
        !/\(t\.id > (\?|\d+)\)/.test(s) &&
        !/t\.`created_at` >= \S+ AND t\.`created_at` < /.test(s),
    );

  async function count(where: string): Promise<number> {
    const [row] = await kit.dataSource.query<{ n: number }[]>(
      `SELECT COUNT(*) AS n FROM login_activities WHERE ${where}`,
    );
    return Number(row.n);
  }

  it.each(cases)(
    '?%s: the database’s count, with no count across the table',
    async (query, where) => {
      const watch = watchStatements(kit.dataSource);
      const reply = await kit
        .as(token)
        .get(`/v1/login_activities?${query}&sort=-created_at`)
        .expect(200);
      const acrossTable = countsAcrossTable(watch.statements());
      watch.stop();
      expect(reply.headers['x-total-count']).toBe(String(await count(where)));
      expect(acrossTable).toEqual([]);
    },
  );

  // A keyset bound keeps whole the hours whose ids lie beyond it; only the hours it cuts are counted.
  it.each([
    ['success=false&after_id=1234', 'success = 0 AND id > 1234'],
    [
      'authentication_method=password&before_id=2345',
      "authentication_method = 'password' AND id < 2345",
    ],
    [
      `otp_required=true&created_from=${from}&after_id=1234`,
      `otp_required = 1 AND created_at >= ${sql(from)} AND id > 1234`,
    ],
    ['after_id=1234&before_id=2345', 'id > 1234 AND id < 2345'],
  ])(
    '?%s: the database’s count, from the rollup and the hours its id bound cuts',
    async (query, where) => {
      const watch = watchStatements(kit.dataSource);
      const reply = await kit.as(token).get(`/v1/login_activities?${query}&sort=-id`).expect(200);
      const names = watch.parameterNames();
      const counts = watch
        .statements()
        .map((statement, i) => [statement, names[i]] as const)
        .filter(([statement]) => /^SELECT COUNT\(\*\)/.test(statement));
      watch.stop();
      expect(reply.headers['x-total-count']).toBe(String(await count(where)));
      // Only the rows appended since the rollup, and whole hours (an edge) cut by a bound.
      const acrossTable = counts.filter(
        ([, parameters]) =>
          !parameters.includes('counted_max_id') && !parameters.includes('edge_from'),
      );
      expect(acrossTable).toEqual([]);
    },
  );

  /** The database's ids for `where` in `sort` order, and the ids of every page the service serves. */
  async function pagesOf(query: string, where: string, sort: string) {
    const column = sort.replace('-', '');
    const order = sort.startsWith('-') ? 'DESC' : 'ASC';
    const rows = await kit.dataSource.query<{ id: number }[]>(
      `SELECT id FROM login_activities WHERE ${where} ORDER BY ${column} ${order}, id ${order}`,
    );
    const expected = rows.map((row) => Number(row.id));
    const limit = 7;
    const served: number[] = [];
    for (let page = 1; page <= Math.ceil(expected.length / limit); page++) {
      const reply = await kit
        .as(token)
        .get(`/v1/login_activities?${query}&sort=${sort}&limit=${limit}&page=${page}`)
        .expect(200);
      served.push(...reply.body.data.map((item: { id: number }) => item.id));
    }
    return { expected, served };
  }

  const pair = ['success=false&otp_required=false', 'success = 0 AND otp_required = 0'] as const;
  const keyset = ['success=false&after_id=600', 'success = 0 AND id > 600'] as const;
  const windowed = [
    `success=false&created_from=${from}&created_to=${to}`,
    `success = 0 AND created_at >= ${sql(from)} AND created_at < ${sql(to)}`,
  ] as const;
  // A window from and to hours without rows (before the first, after the last): a keyset walk in id
  // order has no ids for its partial hours, and none to count there.
  const keysetInEmptyHours = [
    'success=false&after_id=600&created_from=2020-01-01T00:30:00.000Z&created_to=2030-01-01T00:30:00.000Z',
    "success = 0 AND id > 600 AND created_at >= '2020-01-01 00:30:00' AND created_at < '2030-01-01 00:30:00'",
  ] as const;
  it.each([
    [...keysetInEmptyHours, 'id'],
    [...keysetInEmptyHours, '-id'],
    [...pair, 'created_at'],
    [...pair, '-created_at'],
    [...pair, 'id'],
    [...pair, '-id'],
    [...windowed, 'created_at'],
    [...windowed, '-created_at'],
    [...windowed, 'id'],
    [...windowed, '-id'],
    [...keyset, 'created_at'],
    [...keyset, '-created_at'],
    [...keyset, 'id'],
    [...keyset, '-id'],
  ])(
    'positions the deep pages of ?%s (%s), sort=%s, from the rollup: every page the database’s',
    async (query, where, sort) => {
      const column = sort.replace('-', '');
      const watch = watchStatements(kit.dataSource);
      const { expected, served: seen } = await pagesOf(query, where, sort);
      const names = watch.parameterNames();
      // Besides the rows appended since the rollup, bucketed (a short range of ids).
      const histograms = watch
        .statements()
        .filter((s, i) => /GROUP BY bucket/.test(s) && !names[i].includes('counted_max_id'));
      const positioned = names.filter((parameters) => parameters.includes('bucket_edge'));
      watch.stop();
      expect(expected.length).toBeGreaterThan(100);
      expect(seen).toEqual(expected);
      // Positioned from the rollup's hours, not from a histogram counted for the filters.
      if (column === 'created_at') expect(histograms).toEqual([]);
      expect(positioned.length).toBeGreaterThan(0);
    },
  );

  it.each(['created_at', '-created_at'])(
    'starts page 1 of a keyset bound sorted by %s at the hour of its first match',
    async (sort) => {
      const order = sort.startsWith('-') ? 'DESC' : 'ASC';
      const rows = await kit.dataSource.query<{ id: number }[]>(
        `SELECT id FROM login_activities WHERE failure_reason = 'invalid_credentials' AND id > 2100 ORDER BY created_at ${order}, id ${order} LIMIT 7`,
      );
      const watch = watchStatements(kit.dataSource);
      const reply = await kit
        .as(token)
        .get(
          `/v1/login_activities?failure_reason=invalid_credentials&after_id=2100&sort=${sort}&limit=7`,
        )
        .expect(200);
      const positioned = watch.parameterNames().filter((names) => names.includes('bucket_edge'));
      watch.stop();
      expect(reply.body.data.map((item: { id: number }) => item.id)).toEqual(
        rows.map((row) => Number(row.id)),
      );
      expect(positioned.length).toBe(1);
    },
  );

  it('counts the rows appended since the rollup where it positions pages newest first', async () => {
    await kit.data.many(5, (i) =>
      kit.data.loginActivity({
        success: false,
        otp_required: false,
        created_at: new Date(Date.UTC(2026, 10, 20, 23, 0, i)),
      }),
    );
    for (const sort of ['-created_at', '-id']) {
      const watch = watchStatements(kit.dataSource);
      const { expected, served: seen } = await pagesOf(...pair, sort);
      const positioned = watch.parameterNames().filter((names) => names.includes('bucket_edge'));
      watch.stop();
      expect(seen).toEqual(expected);
      expect(positioned.length).toBeGreaterThan(0);
    }
  });

  it('counts a row appended after the rollup in the first total of a new combination', async () => {
    await kit.data.loginActivity({
      success: false,
      otp_required: true,
      authentication_method: 'passkey',
      failure_reason: 'otp_expired',
      created_at: new Date('2026-11-20T12:00:00.000Z'),
    });
    const reply = await kit
      .as(token)
      .get('/v1/login_activities?authentication_method=passkey&failure_reason=otp_expired')
      .expect(200);
    const where = "authentication_method = 'passkey' AND failure_reason = 'otp_expired'";
    expect(Number(reply.headers['x-total-count'])).toBe(await count(where));
    expect(await count(where)).toBeGreaterThan(0);
  });

  it.each(['role', 'role and window', 'window'])(
    'users (%s): the database’s count from the users’ rollup by role',
    async (kind) => {
      const [{ role }] = await kit.dataSource.query<{ role: number }[]>(
        'SELECT MIN(role_id) AS role FROM users',
      );
      // A window from within an hour of the middle user's creation to the last one's.
      const [{ middle }] = await kit.dataSource.query<{ middle: string }[]>(
        'SELECT CAST(created_at AS CHAR) AS middle FROM users ORDER BY created_at LIMIT 1 OFFSET 30',
      );
      const since = new Date(`${middle.replace(' ', 'T').slice(0, 19)}Z`);
      const [query, where] = {
        role: [`role_id=${role}`, `role_id = ${role}`],
        'role and window': [
          `role_id=${role}&created_from=${since.toISOString()}`,
          `role_id = ${role} AND created_at >= ${sql(since.toISOString())}`,
        ],
        window: [
          `created_from=${since.toISOString()}`,
          `created_at >= ${sql(since.toISOString())}`,
        ],
      }[kind]!;
      const watch = watchStatements(kit.dataSource);
      const reply = await kit.as(token).get(`/v1/users?${query}&sort=created_at`).expect(200);
      const acrossTable = countsAcrossTable(watch.statements());
      watch.stop();
      const [{ n }] = await kit.dataSource.query<{ n: number }[]>(
        `SELECT COUNT(*) AS n FROM users WHERE ${where}`,
      );
      expect(reply.headers['x-total-count']).toBe(String(n));
      expect(Number(n)).toBeGreaterThan(0);
      expect(acrossTable).toEqual([]);
    },
  );

  it('reads far pages of a role exactly when users moved into it after the users’ rollup', async () => {
    const [{ role }] = await kit.dataSource.query<{ role: number }[]>(
      'SELECT MAX(role_id) AS role FROM users',
    );
    // The rollup was built at the start: these users are in another role in it.
    await kit.dataSource.query(
      `UPDATE users SET role_id = ${role}, updated_at = '${toSqlDatetime(new Date())}'
        WHERE id IN (SELECT id FROM (SELECT id FROM users WHERE role_id <> ${role} ORDER BY id LIMIT 3) moved)`,
    );
    const rows = await kit.dataSource.query<{ id: number }[]>(
      `SELECT id FROM users WHERE role_id = ${role} ORDER BY id DESC`,
    );
    const expected = rows.map((row) => Number(row.id));
    const limit = 3;
    const served: number[] = [];
    // The last pages first: read from the end, by the total.
    for (let page = Math.ceil(expected.length / limit); page >= 1; page--) {
      const reply = await kit
        .as(token)
        .get(`/v1/users?role_id=${role}&sort=-id&limit=${limit}&page=${page}`)
        .expect(200);
      served.unshift(...reply.body.data.map((item: { id: number }) => item.id));
    }
    expect(served).toEqual(expected);
  });
});

describe('a rollup over ids with a wide gap', () => {
  let kit: TestApp;
  const farId = 2 ** 50;

  beforeAll(async () => {
    // Ids jump from a few thousand to 2^50: read 100k ids a chunk, the build would never end.
    kit = await startWarmedTestApp(
      async (seeded) => {
        await seedDemoData(seeded.dataSource, {
          users: 20,
          activities: 500,
          organizations: 2,
          now: new Date('2026-11-21T00:00:00.000Z'),
        });
        await seeded.data.row('login_activities', {
          id: farId,
          user_email: 'far@example.test',
          authentication_method: 'password',
          ip_address: '192.0.2.9',
          otp_required: false,
          success: false,
          failure_reason: 'unknown_user',
          created_at: new Date('2026-11-20T12:00:00.000Z'),
        });
      },
      { env: { TAIL_HOLDBACK_MS: '0' } },
    );
  }, 90_000);

  afterAll(async () => {
    await kit?.close();
  });

  it('is built, and its totals and pages hold the far row', async () => {
    const api = await kit.client({ scopes: ['login_activities:read'] });
    const [{ n }] = await kit.dataSource.query<{ n: number }[]>(
      'SELECT COUNT(*) AS n FROM login_activities WHERE success = 0 AND otp_required = 0',
    );
    const reply = await api
      .get('/v1/login_activities?success=false&otp_required=false&sort=-id&limit=1')
      .expect(200);
    expect(reply.headers['x-total-count']).toBe(String(n));
    expect(reply.body.data.map((item: { id: number }) => item.id)).toEqual([farId]);
  });
});
