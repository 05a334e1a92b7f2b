import { toSqlDatetime } from '../../src/database/row-values';
import type { Response } from 'supertest';
import {
  eventually,
  filterQuery,
  parseLinks,
  rangeFilter,
  referenceIds,
  startWarmedTestApp,
  TestApp,
  watchStatements,
} from '../kit';

const DAY = 24 * 3_600_000;
/** A page statement that reads a walk bound: SQLite's condition, MySQL's `UNION` branch. */
const BOUND = /t\.`updated_at` >= \? OR t\.id > |FORCE INDEX \(`PRIMARY`\) WHERE \(t\.id > /;
/** The users are created from here on. */
const start = Date.now() - 1600 * DAY;

/**
 * A window on `updated_at` in id or creation order: users updated lately were created lately, at
 * the far end of the walk. The walk starts where the table's histogram by `updated_at` puts the
 * window's rows, and still reads every row changed or appended since it was counted
 * (`walkBoundOf`). Ids need not follow creation (imported users): then only an id walk is as long.
 */
describe.each([
  ['ids in order of creation', (i: number) => i, true],
  ['ids in no order of creation', (i: number) => (i * 7919) % 1500, false],
])('windows on updated_at in id or creation order, %s', (_, rank, idsFollow) => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeded) => {
        // A day apart in creation order (`rank`), each updated a day after its creation.
        await seeded.data.many(1500, (i) =>
          seeded.data.user({
            created_at: new Date(start + rank(i) * DAY),
            updated_at: new Date(start + (rank(i) + 1) * DAY),
          }),
        );
      },
      { env: { RATE_LIMIT_PER_MINUTE: '0' } },
    );
    token = await kit.token();
  }, 60_000);

  afterAll(async () => {
    await kit?.close();
  });

  const iso = (ms: number) => new Date(ms).toISOString();
  /** The last 300 users were updated from here on. */
  const lately = start + 1201 * DAY - 3_600_000;
  const updatedFrom = rangeFilter('updated_from', iso(lately), 'updated_at', '>=');
  const createdFrom = rangeFilter('created_from', iso(lately - DAY), 'created_at', '>=');
  const databaseIds = (sort: string, filter = updatedFrom) =>
    referenceIds(kit.dataSource, 'users', [filter], sort);

  /** Every page of `query`, and whether page 1 read the window's stretch alone. */
  async function pagesOf(query: string): Promise<{ ids: number[]; bounded: boolean }> {
    const ids: number[] = [];
    let bounded = false;
    for (let page = 1; ; page++) {
      const watch = watchStatements(kit.dataSource);
      const reply = await kit.as(token).get(`/v1/users?${query}&limit=10&page=${page}`).expect(200);
      const statements = watch.statements();
      watch.stop();
      // Later pages may sort the matches instead (deeper, or read from the end).
      if (page === 1) bounded = statements.some((sql) => BOUND.test(sql));
      const items = reply.body.data as { id: number }[];
      ids.push(...items.map((item) => item.id));
      if (items.length < 10) return { ids, bounded };
    }
  }

  it.each([
    { filter: updatedFrom, sort: 'created_at' },
    { filter: updatedFrom, sort: 'id' },
    {
      filter: rangeFilter('updated_to', iso(start + 300 * DAY), 'updated_at', '<'),
      sort: '-created_at',
    },
    // Windows holding most users: the walk still starts past the few (a month's) it would pass.
    {
      filter: rangeFilter('updated_to', iso(start + 1440 * DAY), 'updated_at', '<'),
      sort: '-created_at',
    },
    {
      filter: rangeFilter('updated_from', iso(start + 60 * DAY), 'updated_at', '>='),
      sort: 'created_at',
    },
    // And the mirror: a window on creation in update order, whose hours by `updated_at` hold
    // each hour's range of `created_at`.
    { filter: createdFrom, sort: 'updated_at' },
    {
      filter: rangeFilter('created_to', iso(start + 300 * DAY), 'created_at', '<'),
      sort: '-updated_at',
    },
  ])(
    '$filter.parameter sort=$sort: the database’s rows, from the window’s stretch',
    async ({ filter, sort }) => {
      const { ids, bounded } = await pagesOf(filterQuery([filter], sort));
      expect(ids.length).toBeGreaterThan(20);
      expect(ids).toEqual(await databaseIds(sort, filter));
      expect(bounded).toBe(idsFollow || sort !== 'id');
    },
  );

  it('walks on from a cursor without the bound: it already stands past the walk’s start', async () => {
    const query = `updated_from=${iso(lately)}&sort=created_at&limit=25`;
    const ids: number[] = [];
    let url: string | undefined = `/v1/users?${query}`;
    let bounded = 0;
    while (url) {
      const watch = watchStatements(kit.dataSource);
      const reply: Response = await kit.as(token).get(url).expect(200);
      if (watch.statements().some((sql) => BOUND.test(sql))) bounded++;
      watch.stop();
      ids.push(...(reply.body.data as { id: number }[]).map((item) => item.id));
      url = parseLinks(reply.headers.link).next;
    }
    expect(ids).toEqual(await databaseIds('created_at'));
    expect(ids.length).toBeGreaterThan(100);
    // Page 1 only: each step after it would read the rows updated since again.
    expect(bounded).toBe(1);
  });

  it('reads the rows updated and appended since the histograms were counted', async () => {
    // An old user updated now, and one appended (imported) with old times, its update in the
    // window: both at the start of the walk, far before its stretch.
    const [old] = await kit.dataSource.query<{ id: number }[]>(
      'SELECT id FROM users ORDER BY created_at LIMIT 1 OFFSET 5',
    );
    await kit.dataSource.query('UPDATE users SET updated_at = ? WHERE id = ?', [
      toSqlDatetime(new Date()),
      Number(old.id),
    ]);
    const appended = await kit.data.user({
      email: 'appended@changed.test',
      created_at: new Date(start - DAY),
      updated_at: new Date(lately + DAY),
    });
    for (const sort of ['created_at', 'id']) {
      const { ids, bounded } = await pagesOf(`updated_from=${iso(lately)}&sort=${sort}`);
      const expected = await databaseIds(sort);
      expect(expected).toEqual(expect.arrayContaining([Number(old.id), appended.id]));
      expect(ids).toEqual(expected);
      expect(bounded).toBe(idsFollow || sort !== 'id');
    }
    // In update order, a window on creation: a user created in it and appended with an old
    // update (imported) lies before the stretch; the one updated now, after it.
    const imported = await kit.data.user({
      email: 'imported@changed.test',
      created_at: new Date(lately),
      updated_at: new Date(start),
    });
    for (const sort of ['updated_at', '-updated_at']) {
      const { ids, bounded } = await pagesOf(filterQuery([createdFrom], sort));
      const expected = await databaseIds(sort, createdFrom);
      expect(expected).toEqual(expect.arrayContaining([imported.id]));
      expect(ids).toEqual(expected);
      expect(bounded).toBe(true);
    }
  });
});

/**
 * The table's histogram by `updated_at`, which a walk bound reads without asking for it, is
 * counted in full again every COUNT_CACHE_FULL_RECOUNT_MS: a user written against `updated_at`'s
 * contract (an old update at an id re-used by hand, below the last count's highest) is missed by
 * the bound until then, not for good.
 */
describe('a walk bound after the full recount', () => {
  let kit: TestApp;
  const DAY_MS = 24 * 3_600_000;
  const origin = Date.now() - 400 * DAY_MS;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeded) => {
        await seeded.data.many(300, (i) =>
          seeded.data.user({
            created_at: new Date(origin + i * DAY_MS),
            updated_at: new Date(origin + (i + 1) * DAY_MS),
          }),
        );
      },
      { env: { COUNT_CACHE_TTL_MS: '300', COUNT_CACHE_FULL_RECOUNT_MS: '1500' } },
    );
  }, 60_000);

  afterAll(async () => {
    await kit?.close();
  });

  it('reads a user written with an old update at a re-used id once the histogram is counted again', async () => {
    const [{ id }] = await kit.dataSource.query<{ id: number }[]>(
      'SELECT id FROM users ORDER BY id LIMIT 1 OFFSET 10',
    );
    await kit.dataSource.query('DELETE FROM users WHERE id = ?', [Number(id)]);
    const createdFrom = new Date(origin + 250 * DAY_MS);
    // The factory makes its own ids: this one is re-used by hand.
    await kit.dataSource.query(
      `INSERT INTO users (id, name, email, role_id, organization_id, created_at, updated_at)
        SELECT ?, 'Re-used', 'reused@changed.test', role_id, organization_id, ?, ? FROM users LIMIT 1`,
      [
        Number(id),
        toSqlDatetime(new Date(createdFrom.getTime() + DAY_MS / 2)),
        toSqlDatetime(new Date(origin)),
      ],
    );
    const reused = { id: Number(id) };
    const token = await kit.token();
    const filter = rangeFilter('created_from', createdFrom.toISOString(), 'created_at', '>=');
    const pageOne = async () =>
      (
        await kit
          .as(token)
          .get(`/v1/users?${filterQuery([filter], 'updated_at')}&limit=10`)
          .expect(200)
      ).body.data.map((user: { id: number }) => user.id) as number[];
    const ids = await eventually(pageOne, (page) => page.includes(reused.id), 15_000, 200);
    expect(ids).toEqual(
      (await referenceIds(kit.dataSource, 'users', [filter], 'updated_at')).slice(0, 10),
    );
  }, 60_000);
});
