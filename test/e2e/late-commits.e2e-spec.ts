import { toSqlDatetime } from '../../src/database/row-values';
import {
  asExport,
  eventually,
  pageIds,
  parseLinks,
  startTestApp,
  TestApp,
  testTarget,
  UserRow,
} from '../kit';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Two inserts may commit out of order: a count sees id 1,000 while id 500 is still uncommitted.
 * Totals and far pages count again the rows above the highest id seen TAIL_HOLDBACK_MS before,
 * so such a row is taken in at the next advance, not after the full recount (minutes later).
 * An insert with an explicit id below the highest is what a late commit looks like to a reader.
 */
describe('rows committed late below an id a count has seen', () => {
  let kit: TestApp;
  let token: string;

  afterEach(() => kit.close());

  const list = async (query: string) => {
    const response = await kit
      .http()
      .get(`/v1/login_activities?${query}`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    return {
      total: Number(response.headers['x-total-count']),
      ids: (response.body.data as { id: number }[]).map((item) => item.id),
    };
  };
  const idsInDatabase = async (where = '1 = 1') =>
    (
      (await kit.dataSource.query(
        `SELECT id FROM login_activities WHERE ${where} ORDER BY id`,
      )) as { id: number }[]
    ).map((row) => Number(row.id));
  const insertWithId = async (id: number) => {
    const [template] = await kit.dataSource.query(
      'SELECT user_email, user_id, organization_id FROM login_activities ORDER BY id LIMIT 1',
    );
    await kit.dataSource.query(
      `INSERT INTO login_activities (id, user_email, authentication_method, ip_address,
        otp_required, success, user_agent, created_at, user_id, organization_id)
       VALUES (?, ?, 'password', '192.0.2.1', 0, 1, 'jest', ?, ?, ?)`,
      [
        id,
        template.user_email,
        toSqlDatetime(new Date(Date.UTC(2026, 5, 1, 12))),
        template.user_id,
        template.organization_id,
      ],
    );
  };

  /** Every page of `query` at `limit`, read from the last one back (far pages first). */
  const fromTheEnd = async (query: string, limit: number) => {
    const { total } = await list(`${query}&limit=${limit}`);
    const pages: number[][] = [];
    for (let page = Math.ceil(total / limit); page >= 1; page--) {
      pages[page] = (await list(`${query}&limit=${limit}&page=${page}`)).ids;
    }
    return pages.flat();
  };

  /** Totals live 300 ms; ids seen 1 s ago have settled. */
  const startWithTenRows = async (warmup: string) => {
    kit = await startTestApp({
      env: {
        COUNT_CACHE_WARMUP: warmup,
        COUNT_CACHE_TTL_MS: '300',
        COUNT_CACHE_FULL_RECOUNT_MS: '3600000',
        TAIL_HOLDBACK_MS: '1000',
        RATE_LIMIT_PER_MINUTE: '0',
      },
    });
    token = await kit.token();
    const user = await kit.data.user();
    await kit.data.many(10, () => kit.data.loginActivity({ user }));
    await kit.ready();
  };

  it('are in a time window counted before any id had settled', async () => {
    // Nothing settles within the test: every row counted is one that may still commit late.
    kit = await startTestApp({
      env: { TAIL_HOLDBACK_MS: '600000', DEEP_PAGE_ROWS: '10', RATE_LIMIT_PER_MINUTE: '0' },
    });
    token = await kit.token();
    const user = await kit.data.user();
    // Ten an hour from 10:00; the fifth is left for a late commit.
    const rows = [];
    for (let i = 0; i < 40; i++) {
      const created_at = new Date(Date.UTC(2026, 5, 1, 10 + Math.floor(i / 10)));
      rows.push(await kit.data.loginActivity({ user, created_at }));
    }
    await kit.dataSource.query('DELETE FROM login_activities WHERE id = ?', [rows[4].id]);
    // A deep page in time order counts the table's hourly histogram in the background (the
    // first counts the rows with its page).
    await list('sort=created_at&page=3&limit=5');
    await list('sort=created_at&page=3&limit=5');
    await sleep(500);
    await insertWithId(rows[4].id); // at 12:00
    // In time order: an id walk serves no row before an id has settled.
    const window = 'created_from=2026-06-01T12:00:00.000Z&sort=created_at&limit=100';
    const expected = await idsInDatabase("created_at >= '2026-06-01 12:00:00'");
    expect(await list(window)).toEqual({ total: expected.length, ids: expected });
  });

  it.each([
    ['counted', 'false'],
    ['from the rollup', 'true'],
  ])('are in the total and far pages at the next advance (%s)', async (_, warmup) => {
    await startWithTenRows(warmup);
    await kit.warmedUp();
    expect((await list('success=true')).total).toBe(10);
    // The highest id counted so far settles: a transaction commits within the hold-back.
    await sleep(1100);
    await insertWithId(1000);
    await sleep(350);
    expect((await list('success=true')).total).toBe(11);

    // Committed after id 1,000 was counted, below it.
    await insertWithId(500);
    // Within the TTL the cached total is 11; a far page counts again above the settled id.
    // Newest first: in id order, rows this new are still held back (a tail walk's hold-back).
    expect(await fromTheEnd('success=true&sort=-id', 3)).toEqual(
      (await idsInDatabase('success = 1')).reverse(),
    );
    await sleep(350);
    expect((await list('success=true')).total).toBe(12);
  });

  it("are in a window's far pages once its total is cut from its base's histogram", async () => {
    await startWithTenRows('false');
    const window = 'success=true&created_from=2026-01-01T00:30:00.000Z';
    // Counted, and the base's hourly histogram (success=true) counted in the background.
    expect((await list(window)).total).toBe(10);
    await sleep(1100);
    await insertWithId(1000);
    await sleep(350);
    // Cut from the base's histogram now.
    expect((await list(window)).total).toBe(11);
    await insertWithId(500);
    expect(await fromTheEnd(`${window}&sort=-id`, 3)).toEqual(
      (await idsInDatabase('success = 1')).reverse(),
    );
  });
});

/**
 * A change feed (users `sort=updated_at`, ascending) read while an update's transaction is open:
 * a later update commits first, and the feed must not pass it before the earlier one is visible.
 * Two open transactions need a server: MariaDB only.
 */
describe('a change feed and an update committed late', () => {
  const onMysql = (name: string, test: () => Promise<void>) =>
    testTarget === 'mysql' && it(name, test);
  // Long enough that a busy machine reads the feed within it (the case waits it out once).
  const HOLDBACK_MS = 5000;

  onMysql(
    'serves both updates in order once the earlier has committed, skipping none',
    async () => {
      const kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: String(HOLDBACK_MS) } });
      const runner = kit.dataSource.createQueryRunner();
      try {
        const api = kit.as(await kit.token());
        const { id: organization_id } = await kit.data.organization();
        const [early, late] = [
          await kit.data.user({ organization_id }),
          await kit.data.user({ organization_id }),
        ];
        const feed = `/v1/users?organization_id=${organization_id}&sort=updated_at&updated_from=2026-02-01T00:00:00Z`;
        const start = await api.get(feed).expect(200);
        expect(pageIds(start.body)).toEqual([]);
        const next = parseLinks(start.headers.link).next;

        await runner.connect();
        await runner.startTransaction();
        await runner.query('UPDATE users SET updated_at = UTC_TIMESTAMP(3) WHERE id = ?', [
          early.id,
        ]);
        await sleep(20);
        await kit.dataSource.query('UPDATE users SET updated_at = UTC_TIMESTAMP(3) WHERE id = ?', [
          late.id,
        ]);
        // The later update is visible, the earlier not yet: the feed holds the later one back.
        const meanwhile = await api.get(next).expect(200);
        expect(pageIds(meanwhile.body)).toEqual([]);
        await runner.commitTransaction();

        await sleep(HOLDBACK_MS + 200);
        const after = await api.get(parseLinks(meanwhile.headers.link).next).expect(200);
        expect(pageIds(after.body)).toEqual([early.id, late.id]);
      } finally {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        await runner.release();
        await kit.close();
      }
    },
  );
});

/**
 * A log writer may back-date a row (an event ingested late). Held back by its time alone, such a
 * row would be served while an earlier id is still being committed, and carry the poller's cursor
 * past it for good. An id walk serves a row once a higher id has been seen TAIL_HOLDBACK_MS before.
 */
describe('a tail walk and a back-dated row committed before an earlier id', () => {
  const HOLDBACK_MS = 3000;
  const onMysql = (name: string, test: () => Promise<void>) =>
    testTarget === 'mysql' && it(name, test, 30_000);
  /** A login attempt of `user` written with the id a writer took for it. */
  const activityWithId = (kit: TestApp, user: UserRow, id: number, created_at: Date) =>
    kit.data.row('login_activities', {
      id,
      user_email: user.email,
      authentication_method: 'password',
      ip_address: '192.0.2.9',
      otp_required: false,
      success: true,
      created_at,
      user_id: user.id,
      organization_id: user.organization_id,
    });

  it('holds the back-dated row until the earlier id has had the hold-back, then serves both in order', async () => {
    const kit = await startTestApp({
      env: { TAIL_HOLDBACK_MS: String(HOLDBACK_MS), RATE_LIMIT_PER_MINUTE: '0' },
    });
    try {
      const api = kit.as(await kit.token());
      const user = await kit.data.user();
      const hourAgo = () => new Date(Date.now() - 3_600_000);
      const rows = await kit.data.many(3, () =>
        kit.data.loginActivity({ user, created_at: hourAgo() }),
      );
      const last = rows[2].id;
      const activity = (id: number, created_at: Date) => activityWithId(kit, user, id, created_at);
      // The highest id has been seen a hold-back ago (read every HOLDBACK_MS / 4).
      await sleep(HOLDBACK_MS * 1.5);
      const start = await api.get(`/v1/login_activities?after_id=${last}&limit=10`).expect(200);
      expect(pageIds(start.body)).toEqual([]);

      // Id last + 1 is still being written when last + 2, dated an hour back, commits.
      await activity(last + 2, hourAgo());
      const held = await api.get(parseLinks(start.headers.link).next!).expect(200);
      expect(pageIds(held.body)).toEqual([]);
      await activity(last + 1, new Date());

      // The first page to serve either serves both, in order.
      const cursor = parseLinks(held.headers.link).next!;
      const both = await eventually(
        async () => pageIds((await api.get(cursor).expect(200)).body),
        (ids) => ids.length > 0,
        HOLDBACK_MS * 3,
        200,
      );
      expect(both).toEqual([last + 1, last + 2]);
    } finally {
      await kit.close();
    }
  }, 30_000);
  // SQLite has one writer at a time: no id commits after a higher one, but by hand (this test's).
  onMysql(
    'does so from the start: before any id has been seen a hold-back ago, an id walk answers 503',
    async () => {
      const kit = await startTestApp({
        env: { TAIL_HOLDBACK_MS: String(HOLDBACK_MS), RATE_LIMIT_PER_MINUTE: '0' },
      });
      try {
        const api = kit.as(await kit.token());
        const user = await kit.data.user();
        const hourAgo = new Date(Date.now() - 3_600_000);
        const [{ highest }] = await kit.dataSource.query(
          'SELECT COALESCE(MAX(id), 0) AS highest FROM login_activities',
        );
        const last = Number(highest);
        const activity = (id: number) => activityWithId(kit, user, id, hourAgo);
        // Just after the start, id last + 2 commits while last + 1 is still being written.
        await activity(last + 2);
        const started = Date.now();
        // A walk over a window closed long ago: not an empty page that looks finished.
        const closedTo = new Date(Date.now() - 1_800_000).toISOString();
        const closed = await api.get(
          `/v1/login_activities?after_id=${last}&created_to=${closedTo}`,
        );
        if (closed.status !== 503) expect(pageIds(closed.body).length).toBeGreaterThan(0);
        // An export (no total to count first) polls at once: 503 with Retry-After, not last + 2.
        const exported = await asExport(api.get(`/v1/login_activities?after_id=${last}`));
        const served: number[] = [];
        if (exported.status === 503) {
          expect(exported.headers['retry-after']).toBe(String(HOLDBACK_MS / 1000));
        } else {
          // Settled already (a slow start): every row there is then, in order.
          expect(exported.status).toBe(200);
          const lines = String(exported.body).split('\n').filter(Boolean);
          served.push(...lines.map((line) => (JSON.parse(line) as { id: number }).id));
        }
        await sleep(500);
        await activity(last + 1);
        expect(Date.now() - started).toBeLessThan(HOLDBACK_MS + 3000);
        const deadline = Date.now() + HOLDBACK_MS * 3;
        while (!served.includes(last + 2) && Date.now() < deadline) {
          await sleep(200);
          const after = served.at(-1) ?? last;
          const polled = await api.get(`/v1/login_activities?after_id=${after}`);
          if (polled.status === 503) continue; // still settling
          expect(polled.status).toBe(200);
          served.push(...pageIds(polled.body));
        }
        expect(served).toEqual([last + 1, last + 2]);
      } finally {
        await kit.close();
      }
    },
  );
});
