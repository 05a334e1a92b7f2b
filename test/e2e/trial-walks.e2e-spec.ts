import type { Response } from 'supertest';
import {
  eventually,
  FilterCase,
  filterQuery,
  parseLinks,
  rangeFilter,
  referenceIds,
  startWarmedTestApp,
  TestApp,
  watchStatements,
} from '../kit';

const DAY = 24 * 3_600_000;
const MINUTE = 60_000;
/** The users are created a day apart from here on, in id order. */
const start = Date.now() - 1600 * DAY;
/** Every fifth user, wherever it was created, was updated from here on. */
const lately = start + 1550 * DAY;
/** User 1 and the last 400 but every fifth were updated from here on. */
const latest = lately + 3000 * MINUTE;

/**
 * A window on `updated_at` whose matches the histograms cannot place in id or creation order (no
 * walk bound): the plan sorts the matches, but first walks the first √(limit × rows) or so entries
 * in the sort's order, which answers where the matches spread along it (`trialWalk`).
 */
describe('windows whose matches may lie anywhere in the walk: a bounded walk, then the sort', () => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeded) => {
        await seeded.data.many(1500, (i) => {
          const created = start + i * DAY;
          const updated =
            i === 1 || (i >= 1100 && i % 5 !== 0)
              ? latest + i * MINUTE
              : i % 5 === 0
                ? lately + i * MINUTE
                : created + DAY;
          return seeded.data.user({ created_at: new Date(created), updated_at: new Date(updated) });
        });
      },
      // Pages 6 rows deep or more are positioned by the histograms, once those are counted.
      { env: { RATE_LIMIT_PER_MINUTE: '0', DEEP_PAGE_ROWS: '50' } },
    );
    token = await kit.token();
  }, 60_000);

  afterAll(async () => {
    await kit?.close();
  });

  const iso = (ms: number) => new Date(ms).toISOString();
  const spread = [
    rangeFilter('updated_from', iso(lately), 'updated_at', '>='),
    rangeFilter('updated_to', iso(latest), 'updated_at', '<'),
  ];
  /** User 1, at the walk's start, then the rest at its far end. */
  const farEnd = [rangeFilter('updated_from', iso(latest), 'updated_at', '>=')];
  const databaseIds = (filters: FilterCase[], sort: string) =>
    referenceIds(kit.dataSource, 'users', filters, sort);

  /** How a request read its page: by the trial walk alone, or by the sort after it. */
  async function read(url: string): Promise<{ reply: Response; tried: boolean; sorted: boolean }> {
    const watch = watchStatements(kit.dataSource);
    const reply = await kit.as(token).get(url).expect(200);
    const names = watch.parameterNames().filter((params) => params.includes('page_limit'));
    watch.stop();
    const tried = names.findIndex((params) => params.includes('trial_edge'));
    return {
      reply,
      tried: tried >= 0,
      sorted: tried >= 0 && names.slice(tried + 1).some((p) => !p.includes('trial_edge')),
    };
  }

  it.each(['id', 'created_at', '-id', '-created_at'])(
    'sort=%s: page 1 is the trial walk’s, and every page the database’s',
    async (sort) => {
      const ids: number[] = [];
      for (let page = 1; ; page++) {
        const { reply, tried, sorted } = await read(
          `/v1/users?${filterQuery(spread, sort)}&limit=10&page=${page}`,
        );
        if (page === 1) expect({ tried, sorted }).toEqual({ tried: true, sorted: false });
        const items = reply.body.data as { id: number }[];
        ids.push(...items.map((item) => item.id));
        if (items.length < 10) break;
      }
      expect(ids).toHaveLength(300);
      expect(ids).toEqual(await databaseIds(spread, sort));
    },
  );

  it.each(['id', 'created_at'])(
    'sort=%s: a cursor walk steps by trial walks alone',
    async (sort) => {
      const ids: number[] = [];
      let url: string | undefined = `/v1/users?${filterQuery(spread, sort)}&limit=10`;
      let steps = 0;
      let sorts = 0;
      while (url) {
        const { reply, tried, sorted } = await read(url);
        const items = reply.body.data as { id: number }[];
        if (items.length === 0) break; // an ascending id walk goes on for new rows
        if (tried) steps++;
        if (sorted) sorts++;
        ids.push(...items.map((item) => item.id));
        url = parseLinks(reply.headers.link).next;
      }
      expect(ids).toEqual(await databaseIds(spread, sort));
      // Every step but the last tries and keeps its trial; the last one's is short of a page.
      expect(steps).toBeGreaterThanOrEqual(29);
      expect(sorts).toBeLessThanOrEqual(1);
    },
  );

  it.each(['id', 'created_at'])(
    'sort=%s: a trial short of its page gives way to the sort',
    async (sort) => {
      const expected = await databaseIds(farEnd, sort);
      // User 1 among the walk’s first ids, the next match 1,100 users on.
      expect(expected[1] - expected[0]).toBeGreaterThan(1000);
      const ten = await read(`/v1/users?${filterQuery(farEnd, sort)}&limit=10`);
      expect(ten).toMatchObject({ tried: true, sorted: true });
      expect(ten.reply.body.data.map((item: { id: number }) => item.id)).toEqual(
        expected.slice(0, 10),
      );
      // One row: the trial's stretch holds it.
      const one = await read(`/v1/users?${filterQuery(farEnd, sort)}&limit=1`);
      expect(one).toMatchObject({ tried: true, sorted: false });
      expect(one.reply.body.data.map((item: { id: number }) => item.id)).toEqual([expected[0]]);
    },
  );

  it.each(['created_at', '-created_at'])(
    'sort=%s: a positioned page is planned from its bucket’s edge, where its trial walk starts',
    async (sort) => {
      const url = `/v1/users?${filterQuery(spread, sort)}&limit=10&page=9`;
      const expected = (await databaseIds(spread, sort)).slice(80, 90);
      // The window's histogram in the sort's order is counted in the background on a first visit.
      const names = await eventually(
        async () => {
          const watch = watchStatements(kit.dataSource);
          const reply = await kit.as(token).get(url).expect(200);
          const read = watch.parameterNames().filter((params) => params.includes('page_limit'));
          watch.stop();
          expect(reply.body.data.map((item: { id: number }) => item.id)).toEqual(expected);
          return read;
        },
        (read) => read.some((p) => p.includes('bucket_edge')),
        5_000,
      );
      expect(names.flat()).toContain('bucket_edge');
      // Tried from the bucket's edge, its stretch holds the page: no sort follows.
      const tried = names.findIndex((p) => p.includes('bucket_edge') && p.includes('trial_edge'));
      expect(tried).toBeGreaterThanOrEqual(0);
      expect(names.slice(tried + 1)).toEqual([]);
    },
  );

  it.each([
    ['id', 'PRIMARY', /^SEARCH t USING INTEGER PRIMARY KEY \(rowid<\?\)$/],
    [
      'created_at',
      'ix_users_created_at_cover',
      /^SEARCH t USING COVERING INDEX ix_users_created_at_cover \(created_at<\?\)$/,
    ],
  ])(
    'sort=%s: the trial reads a range of %s in its order (EXPLAIN)',
    async (sort, index, sqlite) => {
      const escape = jest.spyOn(kit.dataSource.driver, 'escapeQueryWithParameters');
      await kit
        .as(token)
        .get(`/v1/users?${filterQuery(spread, sort)}&limit=10`)
        .expect(200);
      const trial = escape.mock.calls.findIndex(([, named]) => 'trial_edge' in (named ?? {}));
      const [sql, params] = escape.mock.results[trial].value as [string, unknown[]];
      escape.mockRestore();
      if (kit.dataSource.options.type === 'mysql') {
        const rows = await kit.dataSource.query<Record<string, unknown>[]>(
          `EXPLAIN ${sql}`,
          params,
        );
        const walked = rows.find((row) => row.table === 't');
        expect({ key: walked?.key, type: walked?.type }).toEqual({ key: index, type: 'range' });
        expect(String(walked?.Extra)).not.toMatch(/filesort|temporary/);
      } else {
        const rows = await kit.dataSource.query<{ detail: string }[]>(
          `EXPLAIN QUERY PLAN ${sql}`,
          params,
        );
        const details = rows.map((row) => row.detail);
        expect(details).toContainEqual(expect.stringMatching(sqlite));
        expect(details.filter((detail) => /TEMP B-TREE/.test(detail))).toHaveLength(1); // the join's
      }
    },
  );
});
