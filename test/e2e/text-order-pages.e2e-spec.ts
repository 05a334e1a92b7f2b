import { eventually, startTestApp, TestApp, watchStatements } from '../kit';

/**
 * A deep page in name or e-mail order has no histogram to be positioned by: it is read from the
 * last of the criteria's marks before it (rows at even steps through the order, taken in the
 * background), like a cursor's step. Every page must hold the database's rows in its own
 * collation's order, with ties, case and accents, filtered and scoped, and with users added since
 * the marks were taken.
 */
describe('deep pages in name and e-mail order, read from the marks', () => {
  let kit: TestApp;
  let scope: number;
  const LIMIT = 7;
  /** Totals are advanced by the users added once this has passed; marks are kept. */
  const TTL_MS = 200;
  let added = 0;
  const NAMES = ['anna', 'Anna', 'ÁNNA', 'bob', 'Bob ', 'carl', 'Émile', 'emile', 'zoë', 'Zoe'];

  beforeAll(async () => {
    kit = await startTestApp({
      env: { DEEP_PAGE_ROWS: '10', TAIL_HOLDBACK_MS: '0', COUNT_CACHE_TTL_MS: String(TTL_MS) },
    });
    scope = (await kit.data.organization()).id;
    const role = await kit.data.role();
    await kit.data.many(130, (i) =>
      kit.data.user({
        name: i % 4 === 0 ? NAMES[i % NAMES.length] : `${NAMES[i % NAMES.length]} ${i % 17}`,
        email: `${NAMES[(i * 3) % NAMES.length].trim().normalize('NFD').replace(/\W/g, '')}${i}@example.test`,
        organization_id: i % 2 === 0 ? scope : undefined,
        role_id: role.id,
      }),
    );
  }, 60_000);

  afterAll(() => kit.close());

  const cases: [query: string, where: string, order: string, scoped: boolean][] = [
    ['sort=name', '1 = 1', 'name, id', false],
    ['sort=-name', '1 = 1', 'name DESC, id DESC', true],
    ['sort=-email', '1 = 1', 'email DESC', false],
    ['q=an&sort=name', "(name LIKE 'an%' OR email LIKE 'an%')", 'name, id', false],
  ];

  it.each(cases)(
    '%s: every page as the database has it, before and after users are added',
    async (query, where, order, scoped) => {
      const token = await kit.token({ organizationId: scoped ? scope : null });
      const expected = async () => {
        const scopeSql = scoped ? ` AND organization_id = ${scope}` : '';
        const rows = await kit.dataSource.query<{ id: number }[]>(
          `SELECT id FROM users WHERE ${where}${scopeSql} ORDER BY ${order}`,
        );
        return rows.map((row) => Number(row.id));
      };
      const page = async (n: number) => {
        const reply = await kit
          .as(token)
          .get(`/v1/users?${query}&limit=${LIMIT}&page=${n}`)
          .expect(200);
        return (reply.body.data as { id: number }[]).map((item) => item.id);
      };
      const everyPage = async () => {
        await new Promise((resolve) => setTimeout(resolve, TTL_MS + 50));
        const all = await expected();
        const pages = Math.ceil(all.length / LIMIT);
        const watch = watchStatements(kit.dataSource);
        try {
          for (let n = 1; n <= pages; n++) {
            expect({ n, ids: await page(n) }).toEqual({
              n,
              ids: all.slice((n - 1) * LIMIT, n * LIMIT),
            });
          }
          return watch.parameterNames().flat();
        } finally {
          watch.stop();
        }
      };
      const all = await expected();
      expect(all.length).toBeGreaterThan(6 * LIMIT);
      const middle = Math.ceil(all.length / LIMIT / 2);
      // The first visit walks and takes the marks in the background; later ones start from a mark.
      const watch = watchStatements(kit.dataSource);
      await page(middle);
      // Until the marks are taken, hop by hop: `q`'s stretch also reads past a position, so
      // `cursor_value` alone could come before the background take had gone past its first hop.
      const sampling = () =>
        watch.parameterNames().filter((names) => names.includes('marks_max_id'));
      const marked = await eventually(
        async () => {
          await page(middle);
          return watch.parameterNames().flat();
        },
        (parameters) => parameters.includes('cursor_value') && sampling().length > 1,
      );
      const sampled = sampling();
      watch.stop();
      expect(marked).toContain('cursor_value');
      expect(sampled.length).toBeGreaterThan(1);
      expect(await everyPage()).toContain('cursor_value');
      // Added since the marks: before most of them in either direction, and counted up to the mark.
      for (const name of ['aaron', 'Zz top', 'bobby']) {
        await kit.data.user({
          name,
          email: `${name.replace(' ', '')}.${++added}@example.test`,
          organization_id: scope,
        });
      }
      expect(await everyPage()).toContain('cursor_value');
    },
  );

  /** A second app on the same users, whose warm-up takes the table's and each role's marks. */
  const startWarmedApp = () =>
    startTestApp({
      database: kit.database,
      env: { COUNT_CACHE_WARMUP: 'true', DEEP_PAGE_ROWS: '10', TAIL_HOLDBACK_MS: '0' },
    });

  it('takes the marks at the warm-up, unfiltered and by role: a first visit starts from one', async () => {
    const warmed = await startWarmedApp();
    try {
      await warmed.warmedUp();
      const token = await warmed.token();
      const rows = await warmed.dataSource.query<{ id: number }[]>(
        'SELECT id FROM users ORDER BY email DESC',
      );
      const watch = watchStatements(warmed.dataSource);
      const reply = await warmed
        .as(token)
        .get(`/v1/users?sort=-email&limit=${LIMIT}&page=9`)
        .expect(200);
      const parameters = watch.parameterNames().flat();
      const sampled = watch.parameterNames().filter((names) => names.includes('marks_max_id'));
      watch.stop();
      expect((reply.body.data as { id: number }[]).map((item) => item.id)).toEqual(
        rows.slice(8 * LIMIT, 9 * LIMIT).map((row) => Number(row.id)),
      );
      expect(parameters).toContain('cursor_value');
      expect(sampled).toEqual([]);

      // And a role's, its values read from the users' rollup.
      const [{ role }] = await warmed.dataSource.query<{ role: number }[]>(
        'SELECT role_id AS role FROM users GROUP BY role_id ORDER BY COUNT(*) DESC LIMIT 1',
      );
      const inRole = await warmed.dataSource.query<{ id: number }[]>(
        `SELECT id FROM users WHERE role_id = ${role} ORDER BY name, id`,
      );
      const roleWatch = watchStatements(warmed.dataSource);
      const rolePage = await warmed
        .as(token)
        .get(`/v1/users?role_id=${role}&sort=name&limit=${LIMIT}&page=8`)
        .expect(200);
      const roleParameters = roleWatch.parameterNames();
      roleWatch.stop();
      expect((rolePage.body.data as { id: number }[]).map((item) => item.id)).toEqual(
        inRole.slice(7 * LIMIT, 8 * LIMIT).map((row) => Number(row.id)),
      );
      expect(roleParameters.flat()).toContain('cursor_value');
      expect(roleParameters.filter((names) => names.includes('marks_max_id'))).toEqual([]);

      // And a window that leaves a few users out: the table's marks, less those users.
      const [{ edge }] = await warmed.dataSource.query<{ edge: string }[]>(
        'SELECT CAST(created_at AS CHAR) AS edge FROM users ORDER BY created_at DESC LIMIT 1 OFFSET 20',
      );
      const to = new Date(`${edge.replace(' ', 'T').slice(0, 19)}Z`);
      const windowed = await warmed.dataSource.query<{ id: number }[]>(
        `SELECT id FROM users WHERE created_at < '${edge.slice(0, 19)}' ORDER BY name DESC, id DESC`,
      );
      const windowWatch = watchStatements(warmed.dataSource);
      const windowPage = await warmed
        .as(token)
        .get(`/v1/users?created_to=${to.toISOString()}&sort=-name&limit=${LIMIT}&page=8`)
        .expect(200);
      const windowParameters = windowWatch.parameterNames();
      const windowStatements = windowWatch.statements();
      windowWatch.stop();
      expect((windowPage.body.data as { id: number }[]).map((item) => item.id)).toEqual(
        windowed.slice(7 * LIMIT, 8 * LIMIT).map((row) => Number(row.id)),
      );
      expect(windowParameters.flat()).toContain('outside_at');
      // Counted in the index that carries the name, without reading a row.
      const outsideCounts = windowStatements.filter((_sql, i) =>
        windowParameters[i].includes('outside_at'),
      );
      expect(outsideCounts.length).toBeGreaterThan(0);
      for (const sql of outsideCounts) expect(sql).toContain('ix_users_created_at_cover');
      expect(windowParameters.flat()).toContain('cursor_value');
      // Every page of windows with other edges (first visits), both ways, as the database has them.
      for (const [sort, order] of [
        ['name', 'name, id'],
        ['-name', 'name DESC, id DESC'],
      ]) {
        const edgeTo = new Date(to.getTime() - 1000);
        const rows = await warmed.dataSource.query<{ id: number }[]>(
          `SELECT id FROM users WHERE created_at < '${edgeTo.toISOString().replace('T', ' ').slice(0, 19)}' ORDER BY ${order}`,
        );
        const ids = rows.map((row) => Number(row.id));
        for (let n = 2; n <= Math.ceil(ids.length / LIMIT); n++) {
          const reply = await warmed
            .as(token)
            .get(
              `/v1/users?created_to=${edgeTo.toISOString()}&sort=${sort}&limit=${LIMIT}&page=${n}`,
            )
            .expect(200);
          expect({
            sort,
            n,
            ids: (reply.body.data as { id: number }[]).map((item) => item.id),
          }).toEqual({ sort, n, ids: ids.slice((n - 1) * LIMIT, n * LIMIT) });
        }
      }
    } finally {
      await warmed.close();
    }
  }, 60_000);

  it('reads a deep page of a small window before it has marks: its rows up to a few of the table’s marks, counted at once', async () => {
    const warmed = await startWarmedApp();
    try {
      await warmed.warmedUp();
      const token = await warmed.token();
      for (const [sort, order, windows] of [
        ['name', 'name, id', [35, 36]],
        ['-name', 'name DESC, id DESC', [37, 38]],
      ] as const) {
        // The newest users: a window far smaller than a walk to its middle in name order, visited
        // first at page 3, 14 rows from both ends (each window is new: it has no marks of its own).
        for (const newest of windows) {
          const [{ edge }] = await warmed.dataSource.query<{ edge: string }[]>(
            `SELECT CAST(created_at AS CHAR) AS edge FROM users ORDER BY created_at DESC LIMIT 1 OFFSET ${newest - 1}`,
          );
          const rows = await warmed.dataSource.query<{ id: number }[]>(
            `SELECT id FROM users WHERE created_at >= ? ORDER BY ${order}`,
            [edge],
          );
          expect(rows).toHaveLength(newest);
          const from = `${edge.replace(' ', 'T').slice(0, 23)}Z`;
          const url = `/v1/users?created_from=${from}&sort=${sort}&limit=${LIMIT}`;
          const escape = jest.spyOn(warmed.dataSource.driver, 'escapeQueryWithParameters');
          const reply = await warmed.as(token).get(`${url}&page=3`).expect(200);
          const parameters = escape.mock.calls.flatMap(([, named]) => Object.keys(named ?? {}));
          const counts = escape.mock.results
            .map((result) => result.value as [string, unknown[]])
            .filter(([sql]) => sql.includes('up_to_0'));
          escape.mockRestore();
          expect((reply.body.data as { id: number }[]).map((item) => item.id)).toEqual(
            rows.slice(2 * LIMIT, 3 * LIMIT).map((row) => Number(row.id)),
          );
          expect(parameters).toEqual(expect.arrayContaining(['up_to_0_value', 'cursor_value']));
          // One pass of the window, on an index that carries the name: no row is read.
          expect(counts).toHaveLength(1);
          const [[sql, params]] = counts;
          const mysql = warmed.dataSource.options.type === 'mysql';
          const plan = await warmed.dataSource.query<Record<string, unknown>[]>(
            `EXPLAIN ${mysql ? '' : 'QUERY PLAN '}${sql}`,
            params,
          );
          expect(plan.map((row) => String(mysql ? row.Extra : row.detail)).join()).toMatch(
            mysql ? /Using index/ : /COVERING INDEX/,
          );
          for (let n = 1; n <= Math.ceil(newest / LIMIT); n++) {
            const page = await warmed.as(token).get(`${url}&page=${n}`).expect(200);
            expect({
              sort,
              n,
              ids: (page.body.data as { id: number }[]).map((item) => item.id),
            }).toEqual({
              sort,
              n,
              ids: rows.slice((n - 1) * LIMIT, n * LIMIT).map((row) => Number(row.id)),
            });
          }
        }
      }
    } finally {
      await warmed.close();
    }
  }, 60_000);
});

/**
 * A page short of DEEP_PAGE_ROWS is read from the marks too, once taken, while no user has changed
 * since: the walk to it checks the filter along the sort's index, and at 2M users page 2,500 of
 * `role_id=2&sort=email` passed a million entries. A change since the marks may have moved a user
 * past one: the page is then walked.
 */
describe('pages short of DEEP_PAGE_ROWS in e-mail order', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startTestApp({
      env: { TAIL_HOLDBACK_MS: '0', COUNT_CACHE_TTL_MS: '60000', RATE_LIMIT_PER_MINUTE: '0' },
    });
    const role = await kit.data.role();
    await kit.data.many(2600, (i) =>
      kit.data.user({ email: `u${(i * 7919) % 2600}@example.test`, role_id: role.id }),
    );
  }, 120_000);

  afterAll(() => kit.close());

  it('reads page 120 of 260 from a mark, and walks it once a user has changed', async () => {
    const token = await kit.token();
    const path = '/v1/users?sort=email&limit=10&page=120';
    const expected = async () =>
      (
        await kit.dataSource.query<{ id: number }[]>(
          'SELECT id FROM users ORDER BY email LIMIT 10 OFFSET 1190',
        )
      ).map((row) => Number(row.id));
    const read = async () => {
      const watch = watchStatements(kit.dataSource);
      const reply = await kit.as(token).get(path).expect(200);
      // Read past a mark (the marks' own take, in the background, reads past its last one too).
      const fromMark = watch
        .parameterNames()
        .some((names) => names.includes('cursor_value') && !names.includes('marks_max_id'));
      watch.stop();
      return { ids: (reply.body.data as { id: number }[]).map((item) => item.id), fromMark };
    };
    await read(); // counted with its page
    const marked = await eventually(read, ({ fromMark }) => fromMark, 10_000, 50);
    expect(marked.fromMark).toBe(true);
    expect(marked.ids).toEqual(await expected());
    await kit.dataSource.query(
      "UPDATE users SET email = 'a-first@example.test', updated_at = ? WHERE id = ?",
      [new Date().toISOString().slice(0, 23).replace('T', ' '), marked.ids[0]],
    );
    const walked = await read();
    expect(walked.fromMark).toBe(false);
    expect(walked.ids).toEqual(await expected());
  });
});
