import { eventually, startTestApp, TestApp, UserRow } from '../kit';

/**
 * Totals grow with what changed: a cached total is advanced by counting only the rows appended
 * since (ids above its maximum); a full recount, in the background every
 * COUNT_CACHE_FULL_RECOUNT_MS, takes in deleted rows. Keyset totals come from a histogram of rows
 * per id bucket that is advanced the same way.
 */
describe('totals advanced by appended rows, recounted in full periodically', () => {
  let kit: TestApp;
  let token: string;
  let user: UserRow;

  const total = async (path: string) => {
    const response = await kit.http().get(path).set('Authorization', `Bearer ${token}`).expect(200);
    return Number(response.headers['x-total-count']);
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const countInDatabase = async (where: string) => {
    const [row] = await kit.dataSource.query(
      `SELECT COUNT(*) AS n FROM login_activities WHERE ${where}`,
    );
    return Number(row.n);
  };

  afterEach(() => kit.close());

  /** Ten attempts, then `kit` on them, warmed up (its rollup read), and its token. */
  const warmedUpOnTenRows = async (env: Record<string, string>) => {
    const seeding = await startTestApp();
    user = await seeding.data.user();
    const rows = await seeding.data.many(10, () => seeding.data.loginActivity({ user }));
    kit = await startTestApp({ env, database: seeding.database });
    await kit.warmedUp();
    token = await kit.token();
    return { seeding, rows };
  };

  it('advances a total by the appended rows only, so a deleted row shows only after a full recount', async () => {
    kit = await startTestApp({
      env: { COUNT_CACHE_TTL_MS: '300', COUNT_CACHE_FULL_RECOUNT_MS: '3600000' },
    });
    token = await kit.token();
    user = await kit.data.user();
    const rows = await kit.data.many(10, () => kit.data.loginActivity({ user }));
    expect(await total('/v1/login_activities?success=true')).toBe(10);

    await kit.dataSource.query(`DELETE FROM login_activities WHERE id = ${rows[0].id}`);
    await kit.data.many(3, () => kit.data.loginActivity({ user }));
    await sleep(350);
    // 10 counted + 3 appended; the deleted row waits for the full recount.
    expect(await total('/v1/login_activities?success=true')).toBe(13);
  });

  it("advances from the table's highest id when counted, not the filter's last match", async () => {
    kit = await startTestApp({
      env: { COUNT_CACHE_TTL_MS: '300', COUNT_CACHE_FULL_RECOUNT_MS: '3600000' },
    });
    token = await kit.token();
    user = await kit.data.user();
    // The address's only attempt is old: the rows above it are most of the table.
    await kit.data.loginActivity({ user, ip_address: '203.0.113.9' });
    const later = await kit.data.many(20, () => kit.data.loginActivity({ user }));
    const highest = Math.max(...later.map((row) => row.id));
    expect(await total('/v1/login_activities?ip_address=203.0.113.9')).toBe(1);
    await kit.data.loginActivity({ user, ip_address: '203.0.113.9' });
    await sleep(350);
    const escape = jest.spyOn(kit.dataSource.driver, 'escapeQueryWithParameters');
    try {
      expect(await total('/v1/login_activities?ip_address=203.0.113.9')).toBe(2);
      const [advance] = escape.mock.results
        .map((result) => result.value as [string, unknown[]])
        .filter(([sql]) => /^SELECT COUNT\(\*\)/.test(sql) && /t\.id > /.test(sql));
      // The bound: inlined on SQLite, the last parameter on MySQL.
      const bound = /t\.id > (\d+)/.exec(advance[0])?.[1] ?? advance[1].at(-1);
      expect(Number(bound)).toBe(highest);
    } finally {
      escape.mockRestore();
    }
  });

  it('recounts in full in the background once COUNT_CACHE_FULL_RECOUNT_MS has passed', async () => {
    kit = await startTestApp({
      env: { COUNT_CACHE_TTL_MS: '3000', COUNT_CACHE_FULL_RECOUNT_MS: '0' },
    });
    token = await kit.token();
    user = await kit.data.user();
    const rows = await kit.data.many(10, () => kit.data.loginActivity({ user }));
    expect(await total('/v1/login_activities')).toBe(10);
    await kit.dataSource.query(`DELETE FROM login_activities WHERE id = ${rows[0].id}`);
    await kit.data.many(3, () => kit.data.loginActivity({ user }));
    // In the second half of the total's time a request starts the recount in the background.
    await sleep(1600);
    const counted = await eventually(
      () => total('/v1/login_activities'),
      (value) => value === 12,
      1000,
    );
    expect(counted).toBe(12);
  });

  // Shared through Redis, the advanced total the recount replaces has just been published.
  it.each([
    ['alone', {}],
    [
      'sharing totals through Redis',
      { REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    ],
  ])(
    'recounts in full behind a request that finds its total expired, however rarely requests come (%s)',
    async (_name, shared) => {
      kit = await startTestApp({
        env: { COUNT_CACHE_TTL_MS: '300', COUNT_CACHE_FULL_RECOUNT_MS: '1000', ...shared },
      });
      token = await kit.token();
      user = await kit.data.user();
      const rows = await kit.data.many(10, () => kit.data.loginActivity({ user }));
      expect(await total('/v1/login_activities?success=true')).toBe(10);
      await kit.dataSource.query(`DELETE FROM login_activities WHERE id = ${rows[0].id}`);
      await sleep(1100);
      // Each request after its total's time (never inside the refresh-ahead window): the first one
      // due a full recount is answered advanced, and starts it.
      const seen: number[] = [];
      for (let i = 0; i < 4; i++) {
        seen.push(await total('/v1/login_activities?success=true'));
        await sleep(400);
      }
      expect(seen[0]).toBe(10);
      expect(seen.at(-1)).toBe(9);
    },
  );

  it("does not take a total back to an instance's own older count once another's recount has expired", async () => {
    const env = {
      COUNT_CACHE_TTL_MS: '300',
      COUNT_CACHE_FULL_RECOUNT_MS: '1000',
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    };
    kit = await startTestApp({ env });
    const other = await startTestApp({ env, database: kit.database });
    try {
      token = await kit.token();
      user = await kit.data.user();
      const rows = await kit.data.many(10, () => kit.data.loginActivity({ user }));
      const path = '/v1/login_activities?success=true';
      expect(await total(path)).toBe(10);
      await kit.dataSource.query(`DELETE FROM login_activities WHERE id = ${rows[0].id}`);
      await sleep(1100);
      // The other instance's full recount takes the deleted row in.
      const recounted = await eventually(
        async () =>
          Number(
            (await other.http().get(path).set('Authorization', `Bearer ${token}`).expect(200))
              .headers['x-total-count'],
          ),
        (value) => value === 9,
        2000,
      );
      expect(recounted).toBe(9);
      // Once that total has expired, this instance advances it, not its own copy of 10.
      await sleep(400);
      expect(await total(path)).toBe(9);
    } finally {
      await other.close();
    }
  });

  it("does not take a total back to an instance's older rollup once another's newer total has expired", async () => {
    const env = {
      COUNT_CACHE_WARMUP: 'true',
      COUNT_CACHE_TTL_MS: '300',
      COUNT_CACHE_FULL_RECOUNT_MS: '3600000',
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    };
    const { seeding, rows } = await warmedUpOnTenRows(env);
    let other: TestApp | undefined;
    try {
      const path = '/v1/login_activities?success=true';
      expect(await total(path)).toBe(10);
      await kit.dataSource.query(`DELETE FROM login_activities WHERE id = ${rows[0].id}`);
      // Its rollup, read after the delete, takes it in.
      other = await startTestApp({ env, database: seeding.database });
      await other.warmedUp();
      await sleep(350);
      const ask = await other.http().get(path).set('Authorization', `Bearer ${token}`).expect(200);
      expect(ask.headers['x-total-count']).toBe('9');
      // Once that total has expired, the first instance advances it, not its older rollup's 10.
      await sleep(350);
      expect(await total(path)).toBe(9);
    } finally {
      await other?.close();
      await seeding.close();
    }
  });

  it('takes deleted rows into a rolled-up total on an instance asked again only after a pause', async () => {
    const { seeding, rows } = await warmedUpOnTenRows({
      COUNT_CACHE_WARMUP: 'true',
      COUNT_CACHE_TTL_MS: '300',
      COUNT_CACHE_FULL_RECOUNT_MS: '1000',
    });
    try {
      const path = '/v1/login_activities?success=true';
      expect(await total(path)).toBe(10);
      await kit.dataSource.query(`DELETE FROM login_activities WHERE id = ${rows[0].id}`);
      // Nothing asks meanwhile: the rollup is built again all the same, once due.
      await sleep(1600);
      expect(await total(path)).toBe(9);
    } finally {
      await seeding.close();
    }
  });

  it('answers keyset totals across id buckets from a histogram that appended rows advance', async () => {
    kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: '300' } });
    token = await kit.token();
    user = await kit.data.user();
    await kit.data.many(5, () => kit.data.loginActivity({ user }));
    // Ids spread over several buckets of 4,096.
    for (const id of [5000, 9000, 9001, 13000, 30000]) {
      await kit.dataSource.query(
        `INSERT INTO login_activities (id, user_email, authentication_method, ip_address, otp_required,
          success, user_agent, created_at, user_id, organization_id)
         VALUES (${id}, '${user.email}', 'password', '192.0.2.1', 0, 1, 'jest',
          '2026-06-01 00:00:00.000', ${user.id}, ${user.organization_id})`,
      );
    }
    for (const bound of [0, 3, 4500, 8999, 9000, 12288, 29999, 30000]) {
      expect(await total(`/v1/login_activities?after_id=${bound}`)).toBe(
        await countInDatabase(`id > ${bound}`),
      );
    }
    for (const bound of [1, 5000, 9001, 13001, 40000]) {
      expect(await total(`/v1/login_activities?before_id=${bound}&sort=-id`)).toBe(
        await countInDatabase(`id < ${bound}`),
      );
    }
    await kit.dataSource.query(
      `INSERT INTO login_activities (id, user_email, authentication_method, ip_address, otp_required,
        success, user_agent, created_at, user_id, organization_id)
       VALUES (50000, '${user.email}', 'password', '192.0.2.1', 0, 1, 'jest',
        '2026-06-01 00:00:00.000', ${user.id}, ${user.organization_id})`,
    );
    await sleep(350);
    expect(await total('/v1/login_activities?after_id=4500')).toBe(6);
    expect(await total('/v1/login_activities?after_id=13000')).toBe(2);
  });
});
