import { toSqlDatetime } from '../../src/database/row-values';
import { startWarmedTestApp, TestApp, UserRow, watchStatements } from '../kit';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const start = Date.UTC(2026, 5, 1);

/**
 * A time window in id order (`created_from=…`, the default `sort=id`: "the last day", the request
 * a SIEM sends first) is walked along the primary key from the window's first ids, which the
 * hourly histogram of the log gives (each hour's lowest and highest id), instead of from the
 * start of the log. The bound shortens the walk and never drops a row: rows appended since the
 * histogram, whatever their time, are read too.
 */
describe('time windows in id order start at the window’s ids', () => {
  let kit: TestApp;
  let token: string;
  let user: UserRow;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeded) => {
        user = await seeded.data.user();
        // Ten days, one attempt every 20 minutes, ids growing with time.
        await seeded.data.many(720, (i) =>
          seeded.data.loginActivity({
            user,
            success: i % 4 !== 0,
            created_at: new Date(start + i * 1_200_000),
          }),
        );
        // Users created a day apart and updated a day later, before the log begins.
        await seeded.data.many(200, (i) =>
          seeded.data.user({
            created_at: new Date(start - (300 - i) * DAY),
            updated_at: new Date(start - (299 - i) * DAY),
          }),
        );
      },
      {
        env: {
          TAIL_HOLDBACK_MS: '0',
          DEEP_PAGE_ROWS: '10',
        },
      },
    );
    token = await kit.token();
  }, 60_000);

  afterAll(async () => {
    await kit?.close();
  });

  const iso = (ms: number) => new Date(ms).toISOString();
  const get = (path: string) => kit.as(token).get(path).expect(200);

  async function databaseIds(where: string, order: 'ASC' | 'DESC'): Promise<number[]> {
    const rows = await kit.dataSource.query<{ id: number }[]>(
      `SELECT id FROM login_activities WHERE ${where} ORDER BY id ${order}`,
    );
    return rows.map((row) => Number(row.id));
  }

  const sqlTime = (ms: number) => `'${toSqlDatetime(new Date(ms))}'`;

  it('reads the last day from its first ids, and every one of its rows', async () => {
    const from = start + 9 * 24 * HOUR + 30 * 60_000;
    const watch = watchStatements(kit.dataSource);
    const page = await get(`/v1/login_activities?created_from=${iso(from)}&limit=100`);
    const pages = watch.statements().filter((sql) => /ORDER BY t\.id ASC LIMIT/.test(sql));
    watch.stop();
    const expected = await databaseIds(`created_at >= ${sqlTime(from)}`, 'ASC');
    expect(page.body.data.map((item: { id: number }) => item.id)).toEqual(expected);
    expect(page.headers['x-total-count']).toBe(String(expected.length));
    // The page's walk carries the window's lowest id: it starts near the window, not at id 1.
    expect(pages.some((sql) => /t\.id >= (\?|\d+)\)/.test(sql))).toBe(true);
  });

  it('keeps rows appended since the histogram, whatever their time, and older windows', async () => {
    // Appended after the warm-up: one inside the last day, one back-dated into day 2.
    await kit.data.loginActivity({
      user,
      success: false,
      created_at: new Date(start + 9 * 24 * HOUR + 2 * HOUR),
    });
    await kit.data.loginActivity({ user, success: true, created_at: new Date(start + 26 * HOUR) });
    const from = start + 24 * HOUR;
    const to = start + 2 * 24 * HOUR;
    for (const [path, where, order] of [
      [
        `created_from=${iso(start + 9 * 24 * HOUR)}&sort=-id`,
        `created_at >= ${sqlTime(start + 9 * 24 * HOUR)}`,
        'DESC',
      ],
      [
        `created_from=${iso(from)}&created_to=${iso(to)}`,
        `created_at >= ${sqlTime(from)} AND created_at < ${sqlTime(to)}`,
        'ASC',
      ],
      [`created_to=${iso(to)}&sort=-id`, `created_at < ${sqlTime(to)}`, 'DESC'],
      [
        `created_from=${iso(from)}&created_to=${iso(to)}&success=true`,
        `created_at >= ${sqlTime(from)} AND created_at < ${sqlTime(to)} AND success = 1`,
        'ASC',
      ],
    ] as const) {
      const expected = await databaseIds(where, order);
      const walked: number[] = [];
      let page = await get(`/v1/login_activities?${path}&limit=100`);
      for (;;) {
        walked.push(...page.body.data.map((item: { id: number }) => item.id));
        const next = /<([^>]+)>; rel="next"/.exec(page.headers.link ?? '')?.[1];
        if (!next || page.body.data.length === 0) break;
        page = await get(next);
      }
      expect({ path, walked }).toEqual({ path, walked: expected });
    }
  });

  it('lists a user updated into an updated_at window after the histograms were counted', async () => {
    // The oldest user is updated now: its id lies far below those of the window's other rows.
    const since = start - 120 * DAY;
    const [{ id }] = await kit.dataSource.query<{ id: number }[]>(
      'SELECT MIN(id) AS id FROM users',
    );
    await kit.dataSource.query(
      `UPDATE users SET updated_at = ${sqlTime(Date.now())} WHERE id = ?`,
      [id],
    );
    for (const [sort, order] of [
      ['id', 'id ASC'],
      ['-id', 'id DESC'],
      ['updated_at', 'updated_at ASC, id ASC'],
      ['-created_at', 'created_at DESC, id DESC'],
    ]) {
      const rows = await kit.dataSource.query<{ id: number }[]>(
        `SELECT id FROM users WHERE updated_at >= ${sqlTime(since)} ORDER BY ${order}`,
      );
      const page = await get(`/v1/users?updated_from=${iso(since)}&sort=${sort}&limit=100`);
      expect({ sort, ids: page.body.data.map((item: { id: number }) => item.id) }).toEqual({
        sort,
        ids: rows.map((row) => Number(row.id)),
      });
    }
  });

  it('positions a deep page of a window holding most users at its first visit', async () => {
    // Most users were created before `to`: the 11 after it are what is counted. Three more, added
    // since the histograms, come early in `updated_at` order and first in `-id` order.
    const to = start - 110 * DAY;
    await kit.data.many(3, () =>
      kit.data.user({
        created_at: new Date(start - 291 * DAY),
        updated_at: new Date(start - 290 * DAY),
      }),
    );
    // `id` shares the histogram `-id` made.
    for (const [sort, order, counts] of [
      ['-id', 'id DESC', true],
      ['id', 'id', false],
      ['updated_at', 'updated_at, id', true],
    ] as const) {
      const rows = await kit.dataSource.query<{ id: number }[]>(
        `SELECT id FROM users WHERE created_at < ${sqlTime(to)} ORDER BY ${order}`,
      );
      const path = `/v1/users?created_to=${iso(to)}&sort=${sort}&limit=7`;
      await get(path);
      const watch = watchStatements(kit.dataSource);
      const page = await get(`${path}&page=14`);
      const parameters = watch.parameterNames().flat();
      const grouped = watch.statements().filter((sql) => /GROUP BY bucket/.test(sql));
      watch.stop();
      expect({ sort, ids: page.body.data.map((item: { id: number }) => item.id) }).toEqual({
        sort,
        ids: rows.slice(91, 98).map((row) => Number(row.id)),
      });
      if (counts) expect(parameters).toContain('outside_at');
      // The outside rows are counted from an index that carries the bucket's column.
      if (sort === 'updated_at') expect(grouped.join('\n')).toMatch(/ix_users_created_at_cover/);
      expect(parameters).toContain('bucket_edge');
    }
    // Sorted by creation, the table's rows per hour are the rollup's: a window on updated_at too.
    const updated = start - 110 * DAY;
    const rows = await kit.dataSource.query<{ id: number }[]>(
      `SELECT id FROM users WHERE updated_at < ${sqlTime(updated)} ORDER BY created_at, id`,
    );
    const path = `/v1/users?updated_to=${iso(updated)}&sort=created_at&limit=7`;
    await get(path);
    const watching = watchStatements(kit.dataSource);
    const page = await get(`${path}&page=14`);
    const named = watching.parameterNames().flat();
    watching.stop();
    expect(page.body.data.map((item: { id: number }) => item.id)).toEqual(
      rows.slice(91, 98).map((row) => Number(row.id)),
    );
    expect(named).toEqual(expect.arrayContaining(['outside_at', 'bucket_edge']));
    // A window that leaves out more rows than a walk to the page passes is walked at first.
    const watch = watchStatements(kit.dataSource);
    await get(`/v1/users?created_to=${iso(start - 250 * DAY)}&sort=id&limit=7&page=4`);
    const parameters = watch.parameterNames().flat();
    watch.stop();
    expect(parameters).not.toContain('outside_at');
  });
});
