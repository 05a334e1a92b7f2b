import type { Response } from 'supertest';
import { toSqlDatetime } from '../../src/database/row-values';
import { ApiClient, parseLinks, startTestApp, TestApp, watchStatements } from '../kit';

/**
 * A page in the far half is read from the end, positioned by the total: a cached total that rows
 * have since moved out of (or into) would shift it. Users record changes in `updated_at`, so such a
 * page counts afresh once a row has changed; and `next` never leads past the walk's last row,
 * whatever a stale page_count says (a deleted row is only counted at the next full recount).
 */
describe('far pages and next links while a cached total is stale', () => {
  let kit: TestApp;
  let client: ApiClient;
  const LIMIT = 7;

  beforeEach(async () => {
    kit = await startTestApp({
      env: {
        COUNT_CACHE_TTL_MS: '600000',
        COUNT_CACHE_FULL_RECOUNT_MS: '3600000',
        COUNT_CACHE_WARMUP: 'false',
        TAIL_HOLDBACK_MS: '0',
      },
    });
    client = await kit.client();
  }, 60_000);

  afterEach(() => kit.close());

  /** A role with `count` users, created a second apart. */
  const roleWith = async (count: number) => {
    const role = await kit.data.role();
    const users = await kit.data.many(count, (i) =>
      kit.data.user({ role_id: role.id, created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)) }),
    );
    return { role, ids: users.map((user) => user.id) };
  };

  const page = async (query: string, number: number) => {
    const reply = await client.get(`/v1/users?${query}&limit=${LIMIT}&page=${number}`).expect(200);
    const body = reply.body as { data: { id: number }[]; pagination: { page_count: number } };
    return {
      ids: body.data.map((row) => row.id),
      total: Number(reply.headers['x-total-count']),
      pageCount: body.pagination.page_count,
    };
  };

  const databasePage = async (where: string, order: string, number: number) => {
    const rows: { id: number }[] = await kit.dataSource.query(
      `SELECT id FROM users WHERE ${where} ORDER BY ${order} LIMIT ${LIMIT} OFFSET ${(number - 1) * LIMIT}`,
    );
    return rows.map((row) => Number(row.id));
  };

  const moveToRole = (ids: number[], roleId: number) =>
    kit.dataSource.query(
      `UPDATE users SET role_id = ${roleId}, updated_at = '${toSqlDatetime(new Date())}' WHERE id IN (${ids.join(', ')})`,
    );

  it('reads far pages exactly after users moved out of and into the filter since its total', async () => {
    const a = await roleWith(30);
    const b = await roleWith(10);
    for (const role of [a.role, b.role]) {
      await page(`role_id=${role.id}&sort=-id`, 1); // the totals are cached: 30 and 10
    }
    await moveToRole([a.ids[3], a.ids[11], a.ids[12]], b.role.id);

    for (const [role, total] of [
      [a.role.id, 27],
      [b.role.id, 13],
    ]) {
      for (const sort of ['-id', 'created_at']) {
        const order = sort === '-id' ? 'id DESC' : 'created_at ASC, id ASC';
        // The far half of each (the pages read from the end), and the page past the last.
        for (let number = 2; number <= Math.ceil(total / LIMIT) + 1; number++) {
          const served = await page(`role_id=${role}&sort=${sort}`, number);
          expect(served.ids).toEqual(await databasePage(`role_id = ${role}`, order, number));
        }
      }
      // Counted afresh with its page: the far pages' total is exact.
      const last = await page(`role_id=${role}&sort=-id`, Math.ceil(total / LIMIT));
      expect(last.total).toBe(total);
    }
  });

  it('counts afresh only where a row changed, and only for filters an update can move', async () => {
    const a = await roleWith(30);
    await page(`role_id=${a.role.id}&sort=-id`, 1);
    await page('sort=-id', 1);
    const statements = watchStatements(kit.dataSource);
    try {
      await page(`role_id=${a.role.id}&sort=-id`, 4); // nothing changed: the cached total serves
      expect(statements.fullCounts()).toBe(0);
      await moveToRole([a.ids[0]], (await kit.data.role()).id);
      await page('sort=-id', 4); // no filter: an update moves no row into or out of it
      expect(statements.fullCounts()).toBe(0);
      await page(`role_id=${a.role.id}&sort=-id`, 4);
      expect(statements.fullCounts()).toBe(1);
      // The fresh count replaces the cached total: the next far page does not count again.
      await page(`role_id=${a.role.id}&sort=-id`, 3);
      expect(statements.fullCounts()).toBe(1);
    } finally {
      statements.stop();
    }
  });

  it('reads a far page with the total of its own snapshot: next goes on to the rows appended since', async () => {
    const a = await roleWith(28);
    const query = `role_id=${a.role.id}&sort=created_at`;
    expect((await page(query, 1)).total).toBe(28); // cached: 4 full pages
    const later = await kit.data.many(5, (i) =>
      kit.data.user({ role_id: a.role.id, created_at: new Date(Date.UTC(2026, 0, 2, 0, 0, i)) }),
    );
    const reply = await client.get(`/v1/users?${query}&limit=${LIMIT}&page=4`).expect(200);
    expect(reply.headers['x-total-count']).toBe('33');
    const next = parseLinks(reply.headers.link as string | undefined).next;
    expect(next).toBeDefined();
    const rest = await client.get(next!).expect(200);
    expect((rest.body as { data: { id: number }[] }).data.map((row) => row.id)).toEqual(
      later.map((user) => user.id),
    );
  });

  it('ends a walk by next at its last row, though a deleted row leaves page_count stale', async () => {
    const a = await roleWith(30);
    const query = `role_id=${a.role.id}&sort=-id&limit=${LIMIT}`;
    expect((await page(`role_id=${a.role.id}&sort=-id`, 1)).pageCount).toBe(5);
    await kit.dataSource.query(`DELETE FROM users WHERE id IN (${a.ids.slice(0, 3).join(', ')})`);

    const seen: number[] = [];
    let next: string | undefined = `/v1/users?${query}`;
    while (next) {
      const reply: Response = await client.get(next).expect(200);
      seen.push(...(reply.body as { data: { id: number }[] }).data.map((row) => row.id));
      next = parseLinks(reply.headers.link as string | undefined).next;
    }
    expect(seen).toEqual([...a.ids.slice(3)].reverse());
  });

  it('reads far pages of a keyset walk exactly when users were appended since its histogram', async () => {
    const a = await roleWith(30);
    // The first keyset request has the criteria's histogram by id counted, in the background.
    await page(`sort=name&after_id=${a.ids[0]}`, 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await kit.data.many(4, () => kit.data.user({ role_id: a.role.id }));
    // A new bound's total: the histogram's buckets and a count of the ids near the bound.
    const query = `sort=name&after_id=${a.ids[5]}`;
    const where = `id > ${a.ids[5]}`;
    expect((await page(query, 1)).total).toBe(28);
    for (const number of [3, 4]) {
      expect((await page(query, number)).ids).toEqual(
        await databasePage(where, 'name, id', number),
      );
    }
  });

  it("reads far pages of a window exactly when users were appended into its partial hour since its base's histogram", async () => {
    const hour = 3_600_000;
    const now = Date.now();
    const thisHour = Math.floor(now / hour) * hour;
    // 30 users over the last two hours; the window ends within this hour, after now.
    await kit.data.many(30, (i) =>
      kit.data.user({ created_at: new Date(thisHour - 2 * hour + i * 240_000) }),
    );
    const to = new Date(thisHour + hour - 1000).toISOString();
    const window = (from: number) =>
      `created_from=${encodeURIComponent(new Date(from).toISOString())}&created_to=${encodeURIComponent(to)}&sort=id`;
    // The first window has its base's (no window) hourly histogram counted, in the background.
    await page(window(thisHour - 2 * hour + 1000), 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await kit.data.many(4, () => kit.data.user({ created_at: new Date() }));
    // A new window: the base's whole hours, and its two partial hours counted.
    const from = thisHour - 2 * hour + 1000 + 60_000;
    const where = `created_at >= '${toSqlDatetime(new Date(from))}' AND created_at < '${toSqlDatetime(new Date(to))}'`;
    const [{ n }] = (await kit.dataSource.query(
      `SELECT COUNT(*) AS n FROM users WHERE ${where}`,
    )) as {
      n: number;
    }[];
    expect((await page(window(from), 1)).total).toBe(Number(n));
    for (const number of [3, 4]) {
      expect((await page(window(from), number)).ids).toEqual(
        await databasePage(where, 'id', number),
      );
    }
  });
});
