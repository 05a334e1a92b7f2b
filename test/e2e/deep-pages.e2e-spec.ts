import { startTestApp, TestApp, watchStatements } from '../kit';

/**
 * Pages deeper than DEEP_PAGE_ROWS from both ends are positioned by the criteria's histogram of
 * the sort column (4096-id buckets, hour-long time buckets) instead of walking the index to them.
 * Every page must hold exactly the rows the walk by keyset (the NDJSON export) puts there, for id
 * and time sorts both ways, filtered, scoped, with ties and with times out of id order.
 */
describe('deep pages positioned by the histogram (DEEP_PAGE_ROWS)', () => {
  let kit: TestApp;
  let scope: number;
  const LIMIT = 7;

  beforeAll(async () => {
    kit = await startTestApp({
      env: { DEEP_PAGE_ROWS: '10', COUNT_CACHE_TTL_MS: '60000', TAIL_HOLDBACK_MS: '0' },
    });
    const organization = await kit.data.organization();
    scope = organization.id;
    const user = await kit.data.user({ organization_id: scope });
    const hour = 3_600_000;
    const start = Date.UTC(2026, 5, 1);
    // 240 attempts over 30 hours, in an order of times unlike their ids, with runs of equal times.
    await kit.data.many(240, (i) =>
      kit.data.loginActivity({
        user: i % 3 === 0 ? user : undefined,
        success: i % 4 !== 0,
        created_at: new Date(
          start + ((i * 7919) % 30) * hour + (i % 5 === 0 ? 0 : (i % 11) * 1000),
        ),
      }),
    );
    // And ids spread over many 4096-id buckets.
    for (let i = 0; i < 60; i++) {
      await kit.data.row('login_activities', {
        id: 10_000 + i * 997,
        user_email: `spread${i}@example.test`,
        authentication_method: 'password',
        ip_address: '198.51.100.1',
        otp_required: false,
        success: i % 2 === 0,
        created_at: new Date(start + (i % 30) * hour),
        organization_id: i % 3 === 0 ? scope : null,
      });
    }
  }, 60_000);

  afterAll(() => kit.close());

  const exported = async (token: string, query: string): Promise<number[]> => {
    const reply = await kit
      .as(token)
      .get(`/v1/login_activities?${query}`)
      .set('Accept', 'application/x-ndjson')
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => done(null, text));
      })
      .expect(200);
    return String(reply.body)
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { id: number }).id);
  };

  /**
   * Asks every page twice: the first pass counts the histogram (in the background), the second
   * is positioned by it and must hold the keyset walk's rows and total. Gives the SQL it ran.
   */
  const expectEveryPageAsTheWalk = async (query: string, scoped: string | null) => {
    const token = await kit.token({ organizationId: scoped ? scope : null });
    const all = await exported(token, query);
    expect(all.length).toBeGreaterThan(4 * LIMIT);
    const pages = Math.ceil(all.length / LIMIT);
    const page = (n: number) =>
      kit.as(token).get(`/v1/login_activities?${query}&limit=${LIMIT}&page=${n}`).expect(200);
    for (let n = 1; n <= pages; n++) await page(n);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const statements = watchStatements(kit.dataSource);
    try {
      for (let n = 1; n <= pages; n++) {
        const reply = await page(n);
        const ids = (reply.body.data as { id: number }[]).map((item) => item.id);
        expect({ n, ids, total: reply.headers['x-total-count'] }).toEqual({
          n,
          ids: all.slice((n - 1) * LIMIT, n * LIMIT),
          total: String(all.length),
        });
      }
      return statements.statements();
    } finally {
      statements.stop();
    }
  };

  it.each([
    ['sort=id', null],
    ['sort=-id', null],
    ['sort=created_at', null],
    ['sort=-created_at', null],
    ['success=true&sort=-created_at', null],
    ['success=true&sort=id', 'scoped'],
    ['sort=created_at', 'scoped'],
  ])('%s (%s): every page as the keyset walk has it', async (query, scoped) => {
    const statements = await expectEveryPageAsTheWalk(query, scoped);
    // Deep pages were read from a bucket's edge, not walked to.
    expect(statements.some((sql) => /t\.(id|`created_at`) (>=|<) /.test(sql))).toBe(true);
  });

  describe('time windows, cut from the hourly histogram of the same filters', () => {
    // Rows sit 0-10 s into their hour: an edge 5 s in cuts an hour's rows in two.
    const at = (hours: number, seconds = 5) =>
      encodeURIComponent(
        new Date(Date.UTC(2026, 5, 1) + hours * 3_600_000 + seconds * 1000).toISOString(),
      );

    it.each([
      [`created_from=${at(3)}&created_to=${at(26)}&sort=created_at`, null],
      [`created_from=${at(2)}&sort=-created_at`, null],
      [`created_to=${at(27)}&sort=created_at`, 'scoped'],
      [`success=true&created_from=${at(1, 3)}&created_to=${at(29, 0)}&sort=-created_at`, null],
    ])('%s (%s): totals and every page as the keyset walk has them', async (query, scoped) => {
      await expectEveryPageAsTheWalk(query, scoped);
    });

    it("counts a new window's total as its two partial hours, not the whole window", async () => {
      const token = await kit.token();
      // The base (no window) has its hourly histogram once any window of it has been asked for.
      await kit.as(token).get(`/v1/login_activities?created_from=${at(1.5)}&sort=created_at`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const query = `created_from=${at(4)}&created_to=${at(20, 7)}&sort=created_at`;
      const all = await exported(token, query);
      const statements = watchStatements(kit.dataSource);
      try {
        const reply = await kit.as(token).get(`/v1/login_activities?${query}`).expect(200);
        expect(reply.headers['x-total-count']).toBe(String(all.length));
        // Besides the rows appended since the counts it is cut from (ids above their highest).
        const counts = statements
          .statements()
          .filter((sql) => /^SELECT COUNT\(\*\)/.test(sql) && !/\(t\.id > (\?|\d+)\)/.test(sql));
        expect(counts).toHaveLength(2);
      } finally {
        statements.stop();
      }
    });
  });

  it('deep pages hold the rows appended since their histogram, within its TTL (scoped)', async () => {
    const queries = ['sort=-created_at', 'sort=-id'];
    // Scoped, the rollup does not answer: the pages are positioned by the criteria's histogram.
    for (const query of queries) await expectEveryPageAsTheWalk(query, 'scoped');
    const user = await kit.data.user({ organization_id: scope });
    // Newest first, rows appended since the histogram come before every deep page.
    await kit.data.many(5, () => kit.data.loginActivity({ user, created_at: new Date() }));
    const token = await kit.token({ organizationId: scope });
    for (const query of queries) {
      const all = await exported(token, query);
      for (let n = 2; n < Math.ceil(all.length / LIMIT); n++) {
        const reply = await kit
          .as(token)
          .get(`/v1/login_activities?${query}&limit=${LIMIT}&page=${n}`)
          .expect(200);
        const ids = (reply.body.data as { id: number }[]).map((item) => item.id);
        expect({ query, n, ids }).toEqual({ query, n, ids: all.slice((n - 1) * LIMIT, n * LIMIT) });
      }
    }
  });
});
