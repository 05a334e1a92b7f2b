import { startTestApp, TestApp, watchStatements } from '../kit';

/**
 * `q` is a prefix of the name or the e-mail. Sorted by one of them, its matches on that column are
 * one stretch of that column's index, and the other column's matches lie before or after it: a
 * deep page is read along the stretch after counting those before it, not by sorting every match.
 * Every page must still be the database's.
 */
describe('deep pages of q in name or e-mail order, read along the stretch of the sort column', () => {
  let kit: TestApp;
  let role: number;
  const LIMIT = 7;

  beforeAll(async () => {
    kit = await startTestApp({ env: { DEEP_PAGE_ROWS: '10', RATE_LIMIT_PER_MINUTE: '0' } });
    role = (await kit.data.role()).id;
    const other = (await kit.data.role()).id;
    const users: [name: string, email: string][] = [
      // Both match; the name alone; the e-mail alone, named before and after the names' stretch.
      ...Array.from({ length: 10 }, (_, i): [string, string] => [`Karl ${i}`, `karl${i}@x.test`]),
      ...Array.from({ length: 80 }, (_, i): [string, string] => [`Kara ${i % 13}`, `u${i}@x.test`]),
      ...Array.from({ length: 15 }, (_, i): [string, string] => [`Aaron ${i}`, `kar.a${i}@x.test`]),
      ...Array.from({ length: 15 }, (_, i): [string, string] => [`Zed ${i}`, `karz${i}@x.test`]),
      ...Array.from({ length: 40 }, (_, i): [string, string] => [`Noise ${i}`, `noise${i}@x.test`]),
    ];
    await kit.data.many(users.length, (i) =>
      kit.data.user({
        name: users[i][0],
        email: users[i][1],
        role_id: i % 3 === 0 ? other : role,
      }),
    );
  }, 60_000);

  afterAll(() => kit.close());

  const pagesOf = async (query: string) => {
    const token = await kit.token();
    const served: number[] = [];
    for (let page = 1; ; page++) {
      const reply = await kit
        .as(token)
        .get(`/v1/users?${query}&limit=${LIMIT}&page=${page}`)
        .expect(200);
      const ids = (reply.body.data as { id: number }[]).map((item) => item.id);
      served.push(...ids);
      if (ids.length < LIMIT) return served;
    }
  };

  it.each([
    ['q=kar&sort=name', '1 = 1', 'name, id'],
    ['q=kar&sort=-name', '1 = 1', 'name DESC, id DESC'],
    ['q=kar&sort=email', '1 = 1', 'email'],
    ['q=kar&sort=-email', '1 = 1', 'email DESC'],
    ['q=Kar&role_id=ROLE&sort=name', 'role_id = ROLE', 'name, id'],
  ])('%s: every page the database’s, deep ones along the stretch', async (query, where, order) => {
    const token = await kit.token();
    const rows = await kit.dataSource.query<{ id: number }[]>(
      `SELECT id FROM users WHERE (name LIKE 'kar%' OR email LIKE 'kar%') AND ${where.replace('ROLE', String(role))} ORDER BY ${order}`,
    );
    const expected = rows.map((row) => Number(row.id));
    const pages = Math.ceil(expected.length / LIMIT);
    const served: number[] = [];
    let alongStretch = 0;
    for (let page = 1; page <= pages; page++) {
      const watch = watchStatements(kit.dataSource);
      const reply = await kit
        .as(token)
        .get(`/v1/users?${query.replace('ROLE', String(role))}&limit=${LIMIT}&page=${page}`)
        .expect(200);
      // The others' rows before a row of the stretch: counted on their own column's index.
      if (watch.statements().some((sql) => /AND NOT \(t\.`(name|email)` LIKE/.test(sql))) {
        alongStretch++;
      }
      watch.stop();
      served.push(...(reply.body.data as { id: number }[]).map((item) => item.id));
    }
    expect(expected.length).toBeGreaterThan(60);
    expect(served).toEqual(expected);
    // Pages more than 10 rows from both ends, less the one that reaches past the stretch.
    expect(alongStretch).toBeGreaterThanOrEqual(pages - 6);
  });

  it('reads a deep page asked for first, with its count, along the stretch', async () => {
    // A role of its own: no total of these criteria is cached, so the page is read in the count's
    // snapshot.
    const fresh = (await kit.data.role()).id;
    await kit.data.many(40, (i) =>
      kit.data.user({ name: `Karo ${i}`, email: `karo${i}@z.test`, role_id: fresh }),
    );
    await kit.data.many(5, (i) =>
      kit.data.user({ name: `Bea ${i}`, email: `karo.b${i}@z.test`, role_id: fresh }),
    );
    const rows = await kit.dataSource.query<{ id: number }[]>(
      `SELECT id FROM users WHERE (name LIKE 'kar%' OR email LIKE 'kar%') AND role_id = ${fresh} ORDER BY name, id`,
    );
    const watch = watchStatements(kit.dataSource);
    const reply = await kit
      .as(await kit.token())
      .get(`/v1/users?q=kar&role_id=${fresh}&sort=name&limit=${LIMIT}&page=4`)
      .expect(200);
    const statements = watch.statements();
    watch.stop();
    const ids = (reply.body.data as { id: number }[]).map((item) => item.id);
    expect(ids).toEqual(rows.slice(3 * LIMIT, 4 * LIMIT).map((row) => Number(row.id)));
    expect(reply.body.pagination.page_count).toBe(Math.ceil(rows.length / LIMIT));
    expect(statements.some((sql) => /SELECT COUNT\(\*\)/.test(sql))).toBe(true);
    expect(statements.some((sql) => /AND NOT \(t\.`name` LIKE/.test(sql))).toBe(true);
  });

  it('reads the pages of a stretch that other rows interleave as the database orders them', async () => {
    // MySQL's unicode_ci sorts `Kaßb` as `Kassb`, between `Kassandra` and `Kassz`, yet `Kaßb` is
    // no match of `kas%`: found by its e-mail, it lies within the names' stretch.
    await kit.data.many(30, (i) =>
      kit.data.user({ name: i < 20 ? `Kassandra ${i}` : `Kassz ${i}`, email: `k${i}@y.test` }),
    );
    await kit.data.user({ name: 'Kaßb', email: 'kas.b@y.test' });
    const rows = await kit.dataSource.query<{ id: number }[]>(
      "SELECT id FROM users WHERE name LIKE 'kas%' OR email LIKE 'kas%' ORDER BY name, id",
    );
    expect(await pagesOf('q=kas&sort=name')).toEqual(rows.map((row) => Number(row.id)));
  });
});
