import { IndexPath, sortKeys } from '../../src/common/listing/listing-definition';
import { ListingIndexes1763856000000 } from '../../src/database/migrations/1763856000000-listing-indexes';
import { IndexPerFilterAndSort1764028800000 } from '../../src/database/migrations/1764028800000-index-per-filter-and-sort';
import { seedDemoData } from '../../src/database/seed/demo-data';
import { LoginActivitiesRepository } from '../../src/login-activities/login-activities.repository';
import { UsersRepository } from '../../src/users/users.repository';
import { servedListings, startTestApp, TestApp } from '../kit';

/**
 * Every documented filter × sort, alone and in pairs, runs the plan the planner chose
 * (`listing-planner.ts`), at any depth. The test EXPLAINs the statements a request really runs
 * (the count and the page, caught on their way to the driver), near the start and in the far half,
 * on a few thousand realistic rows with fresh statistics. Every statement reads the index it names
 * (never a full scan of the listed table: MySQL/MariaDB `type=ALL`, SQLite a plain `SCAN`); a walk
 * plan (the index in the sort's order) also never sorts (`Using filesort`, `USE TEMP B-TREE`),
 * while a sort plan reads its index and sorts what it found. Only the listed table (`t`) counts:
 * the deferred join's outer ORDER BY sorts the page's own rows, and a histogram groups by design.
 */
describe('listing indexes (EXPLAIN of every filter and sort)', () => {
  let kit: TestApp;
  let mysql: boolean;
  /** The tables of every listing the app serves (a module added to AppModule too). */
  let listedTables: Set<string>;
  const tokens = new Map<number | null, Promise<string>>();

  beforeAll(async () => {
    // Totals are cached as in production: a pair's plan is priced from its filters' totals.
    kit = await startTestApp({ env: { COUNT_CACHE_WARMUP: 'false', RATE_LIMIT_PER_MINUTE: '0' } });
    mysql = kit.dataSource.options.type === 'mysql';
    const tables = servedListings(kit).map((definition) => definition.table);
    listedTables = new Set(tables);
    await seedDemoData(kit.dataSource, {
      users: 3000,
      activities: 6000,
      organizations: 25,
      batchSize: 500,
      now: new Date('2026-11-21T00:00:00.000Z'),
    });
    if (mysql) await kit.dataSource.query(`ANALYZE TABLE ${tables.join(', ')}`);
    else await kit.dataSource.query('ANALYZE');
  }, 120_000); // Seeding a few thousand rows; jest applies no project-level timeout.

  afterAll(() => kit.close());

  /** A full scan of a listed table, by alias (`t`, `x`) or by name. */
  const scansListedTable = (detail: string) => {
    const scanned = /^SCAN (\w+)$/.exec(detail)?.[1];
    return (
      scanned !== undefined && (scanned === 't' || scanned === 'x' || listedTables.has(scanned))
    );
  };

  /** The plan a statement names: its index, and whether that index keeps the ORDER BY's order. */
  function namedPlan(sql: string, paths: readonly IndexPath[]): { index?: string; walk: boolean } {
    // Several indexes (a union of their ranges) are named to MySQL alone: in one FORCE INDEX (an
    // index merge), or one in each branch of a UNION.
    const named = /FORCE INDEX \(([^)]+)\)|INDEXED BY `(\w+)`/.exec(sql);
    const forced = [...sql.matchAll(/FORCE INDEX \(([^)]+)\)/g)].map((m) => m[1]);
    const list = forced.length ? forced.join(',').replace(/[` ]/g, '') : undefined;
    const index = named ? (list ?? named[2]) : /NOT INDEXED/.test(sql) ? 'PRIMARY' : undefined;
    const order = /ORDER BY t\.`?(\w+)/.exec(sql)?.[1];
    const path = paths.find((p) => p.index === index);
    const walk =
      !order || (index ?? 'PRIMARY') === 'PRIMARY'
        ? order === undefined || order === 'id'
        : path?.unique === true || path?.sort === order;
    return { index, walk };
  }

  /** What in a statement's plan differs from the plan it names. */
  async function planProblems(
    sql: string,
    params: unknown[],
    plan: { index?: string; walk: boolean },
  ): Promise<string[]> {
    const histogram = /GROUP BY/.test(sql);
    const sorts = plan.walk && !histogram;
    if (mysql) {
      const rows: Record<string, unknown>[] = await kit.dataSource.query(`EXPLAIN ${sql}`, params);
      return rows.flatMap((row) => {
        const table = String(row.table);
        const extra = String(row.Extra ?? '');
        const problems: string[] = [];
        if (['t', 'x'].includes(table) && String(row.type).toUpperCase() === 'ALL') {
          problems.push(`${table}: type=ALL`);
        }
        const key = String(row.key);
        if (
          table === 't' &&
          plan.index &&
          key !== plan.index &&
          !plan.index.split(',').includes(key)
        ) {
          problems.push(`t: key ${String(row.key)}, not ${plan.index}`);
        }
        if (table === 't' && sorts) {
          for (const sort of ['Using filesort', 'Using temporary']) {
            if (extra.includes(sort)) problems.push(`${table}: ${sort} (key ${String(row.key)})`);
          }
        }
        return problems;
      });
    }
    const rows: { id: number; parent: number; detail: string }[] = await kit.dataSource.query(
      `EXPLAIN QUERY PLAN ${sql}`,
      params,
    );
    // SQLite keeps a table in its primary key's order: `SCAN t` for an `ORDER BY id` page is the
    // walk along the primary key (MySQL's `type = index` on PRIMARY), stopped by the LIMIT.
    const walksPrimaryKey = /ORDER BY t\.id (ASC|DESC)( LIMIT|$)/.test(sql) && plan.walk;
    const deferredJoin = /\) p JOIN/.test(sql);
    const problems = rows
      .filter(
        ({ detail, parent }) =>
          (scansListedTable(detail) && !(walksPrimaryKey && detail === 'SCAN t')) ||
          (/USE TEMP B-TREE/.test(detail) && sorts && !(deferredJoin && parent === 0)),
      )
      .map(({ detail }) => detail);
    const reads = rows.filter(({ detail }) => /^(SCAN|SEARCH) t\b/.test(detail));
    if (
      plan.index &&
      plan.index !== 'PRIMARY' &&
      !reads.some((r) => r.detail.includes(plan.index!))
    ) {
      problems.push(`t not read through ${plan.index}: ${reads.map((r) => r.detail).join('; ')}`);
    }
    return problems;
  }

  const tokenFor = (organizationId: number | null): Promise<string> => {
    if (!tokens.has(organizationId)) tokens.set(organizationId, kit.token({ organizationId }));
    return tokens.get(organizationId)!;
  };

  interface Reply {
    status: number;
    body: {
      pagination?: { page_count: number };
      errors?: { parameter: string; message: string }[];
    };
    statements: { name: string; sql: string; params: unknown[] }[];
  }

  /** A request's reply and the statements it ran on the listed table, as the driver got them. */
  async function request(
    path: string,
    params: Record<string, string>,
    organizationId: number | null,
  ): Promise<Reply> {
    const driver = kit.dataSource.driver;
    const escape = jest.spyOn(driver, 'escapeQueryWithParameters');
    try {
      const reply = await kit
        .as(await tokenFor(organizationId))
        .get(`${path}?${new URLSearchParams(params).toString()}`);
      expect(reply.status).toBe(200);
      const statements = escape.mock.results
        .filter((result) => result.type === 'return')
        .map((result) => result.value as [string, unknown[]])
        .filter(([sql]) => listedTables.has(/FROM `(\w+)` t\b/.exec(sql)?.[1] ?? ''))
        .map(([sql, values]) => ({
          // Counts: the total, or a keyset walk's histogram of rows per id bucket.
          name: /COUNT\(\*\)/.test(sql) ? 'count' : 'page',
          sql,
          params: values,
        }));
      return { status: reply.status, body: reply.body as Reply['body'], statements };
    } finally {
      escape.mockRestore();
    }
  }

  /**
   * Requests `params` near the start (page 2) and in the far half (90% of the pages, read from
   * the end): the plan problems of every statement run, and the kinds of plan they ran.
   */
  async function check(
    path: string,
    params: Record<string, string>,
    organizationId: number | null,
    paths: readonly IndexPath[],
  ): Promise<{ problems: string[]; kinds: Set<string> }> {
    const label = `?${new URLSearchParams(params).toString()} scope=${organizationId ?? '-'}`;
    const near = await request(path, { ...params, page: '2', limit: '5' }, organizationId);
    expect({ label, status: near.status }).toEqual({ label, status: 200 });
    const pages = near.body.pagination?.page_count ?? 0;
    const replies = [near];
    if (pages > 3) {
      const far = { ...params, page: String(Math.floor(pages * 0.9)), limit: '5' };
      replies.push(await request(path, far, organizationId));
    }
    const problems: string[] = [];
    const kinds = new Set<string>();
    for (const reply of replies) {
      for (const statement of reply.statements) {
        const plan = namedPlan(statement.sql, paths);
        if (statement.name === 'page') {
          kinds.add(plan.walk ? 'walk' : 'sort');
        }
        const found = await planProblems(statement.sql, statement.params, plan);
        if (found.length) {
          problems.push(`${label} ${statement.name}: ${statement.sql} → ${found.join('; ')}`);
        }
      }
    }
    return { problems, kinds };
  }

  /** Each filter alone (unscoped and scoped) and each pair, with each sort. */
  async function checkAll(
    path: string,
    filters: Record<string, string>,
    sorts: string[],
    scope: number,
    paths: readonly IndexPath[],
  ): Promise<{ problems: string[]; checked: number; kinds: Set<string> }> {
    const entries = Object.entries(filters);
    const combinations: [string, string][][] = [[], ...entries.map((entry) => [entry])];
    for (let i = 0; i < entries.length; i++) {
      for (let j = i + 1; j < entries.length; j++) combinations.push([entries[i], entries[j]]);
    }
    const problems: string[] = [];
    const kinds = new Set<string>();
    let checked = 0;
    for (const combination of combinations) {
      for (const sort of sorts) {
        for (const organizationId of combination.length < 2 ? [null, scope] : [null]) {
          const params = { ...Object.fromEntries(combination), sort };
          const result = await check(path, params, organizationId, paths);
          checked += 1;
          problems.push(...result.problems);
          result.kinds.forEach((kind) => kinds.add(kind));
        }
      }
    }
    return { problems, checked, kinds };
  }

  it('runs the chosen plan for every users filter alone and in pairs, with every sort', async () => {
    const repository = kit.app.get(UsersRepository);
    const [user] = await kit.dataSource.query(
      'SELECT id, name, email, role_id, organization_id FROM users ORDER BY id LIMIT 1 OFFSET 1234',
    );
    const filters = {
      organization_id: String(user.organization_id),
      role_id: String(user.role_id),
      email: String(user.email).toUpperCase(),
      q: String(user.name).slice(0, 3),
      created_from: '2026-01-01T00:00:00Z',
      created_to: '2026-02-01T00:00:00+02:00',
      updated_from: '2026-03-01T00:00:00Z',
      updated_to: '2026-04-01T00:00:00Z',
    };
    const scope = Number(user.organization_id);
    const sorts = sortKeys(repository.definition);
    const paths = repository.definition.indexes;
    const result = await checkAll('/v1/users', filters, sorts, scope, paths);
    for (const [params, organizationId] of [
      [{ ...filters, sort: '-updated_at' }, null],
      [{ after_id: '1500' }, null],
      [{ before_id: '1500', sort: '-id' }, scope],
      [{ after_id: '1500', sort: 'name' }, null],
    ] as const) {
      result.problems.push(...(await check('/v1/users', params, organizationId, paths)).problems);
    }
    expect(result.checked).toBe((1 + 8) * 2 * 10 + 28 * 10);
    expect([...result.kinds].sort()).toEqual(['sort', 'walk']);
    expect(result.problems).toEqual([]);
  }, 300_000);

  it('runs the chosen plan for every login activity filter alone and in pairs, with every sort', async () => {
    const repository = kit.app.get(LoginActivitiesRepository);
    const [activity] = await kit.dataSource.query(
      'SELECT user_id, user_email, ip_address, session_id, organization_id FROM login_activities WHERE session_id IS NOT NULL ORDER BY id LIMIT 1 OFFSET 2000',
    );
    const filters = {
      user_id: String(activity.user_id),
      user_email: String(activity.user_email).toUpperCase(),
      success: 'false',
      authentication_method: 'oauth',
      oauth_provider: 'github',
      failure_reason: 'otp_invalid',
      ip_address: String(activity.ip_address),
      session_id: String(activity.session_id),
      otp_required: 'true',
      created_from: '2026-10-01T00:00:00Z',
      created_to: '2026-10-15T00:00:00-05:00',
    };
    const scope = Number(activity.organization_id);
    const sorts = sortKeys(repository.definition);
    const paths = repository.definition.indexes;
    const path = '/v1/login_activities';
    const result = await checkAll(path, filters, sorts, scope, paths);
    for (const [params, organizationId] of [
      [{ ...filters }, null],
      [{ after_id: '3000' }, null],
      [{ before_id: '3000', sort: '-id', success: 'false' }, scope],
      [{ after_id: '3000', sort: '-created_at', success: 'false' }, null],
    ] as const) {
      result.problems.push(...(await check(path, params, organizationId, paths)).problems);
    }
    expect(result.checked).toBe((1 + 11) * 2 * 4 + 55 * 4);
    expect([...result.kinds].sort()).toEqual(['sort', 'walk']);
    expect(result.problems).toEqual([]);
  }, 300_000);

  it('reads a short walk along the primary key straight, without the deferred join, lookups by primary key', async () => {
    const plan = async (
      path: string,
      params: Record<string, string>,
      offset: number,
      limit: number,
    ) => {
      const { statements } = await request(
        path,
        { ...params, page: String(offset / limit + 1), limit: String(limit) },
        null,
      );
      const page = statements.find((statement) => statement.name === 'page')!;
      const rows: Record<string, unknown>[] = await kit.dataSource.query(
        `${mysql ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${page.sql}`,
        page.params,
      );
      return {
        // `page ids`: the page's ids are walked first, then read (the deferred join). Totals
        // are cached, so counts are left out.
        names: [
          ...new Set(
            statements.flatMap((statement) =>
              /\) p JOIN/.test(statement.sql) ? ['page ids', 'page'] : [statement.name],
            ),
          ),
        ].filter((name) => name !== 'count'),
        // MySQL/MariaDB: table and key of each row; SQLite: the plan's lines.
        steps: rows.map((row) =>
          mysql ? `${String(row.table)} ${String(row.key)}` : String(row.detail),
        ),
      };
    };
    const activities = '/v1/login_activities';
    const primaryKeyWalk = mysql ? ['t PRIMARY'] : [expect.stringMatching(/^(SCAN|SEARCH) t\b/)];
    for (const [params, offset, limit] of [
      [{}, 0, 100],
      [{}, 100, 100],
      [{ after_id: '3000' }, 0, 20],
      [{ before_id: '3000', sort: '-id' }, 0, 20],
    ] as const) {
      const { names, steps } = await plan(activities, params, offset, limit);
      expect({ params, names, steps }).toEqual({
        params,
        names: ['page'],
        steps: primaryKeyWalk,
      });
    }
    // A listing with lookups (users: role and organization names) walks its own primary key as
    // well, and looks each of the page's rows up by primary key, never starting from the lookup
    // table (with joins, the optimizer started from roles and sorted).
    const usersPage = await plan('/v1/users', {}, 0, 20);
    expect(usersPage.names).toEqual(['page']);
    expect(usersPage.steps[0]).toEqual(primaryKeyWalk[0]);
    const lookupSteps = mysql
      ? usersPage.steps.slice(1)
      : usersPage.steps.filter((step) => /\b(SCAN|SEARCH) l\b/.test(step));
    const lookupByPrimaryKey = mysql
      ? 'l PRIMARY'
      : expect.stringMatching(/^SEARCH l USING INTEGER PRIMARY KEY/);
    expect(lookupSteps).toEqual([lookupByPrimaryKey, lookupByPrimaryKey]);
    // Deeper, filtered or sorted otherwise: the page's ids are walked first.
    const deferred = ['page ids', 'page'];
    expect((await plan(activities, {}, 200, 20)).names).toEqual(deferred);
    expect((await plan(activities, { success: 'false' }, 0, 20)).names).toEqual(deferred);
    expect((await plan(activities, { sort: '-created_at' }, 0, 20)).names).toEqual(deferred);
    expect((await plan('/v1/users', { sort: 'name' }, 0, 20)).names).toEqual(deferred);
  });

  it('reverts and re-applies its migrations cleanly', async () => {
    const indexNames = async (table: string): Promise<string[]> => {
      const rows: { Key_name?: string; name?: string }[] = await kit.dataSource.query(
        mysql ? `SHOW INDEX FROM ${table}` : `PRAGMA index_list(${table})`,
      );
      return rows.map((row) => String(row.Key_name ?? row.name));
    };
    const added = [
      'ix_users_org_created_at',
      'ix_login_activities_success',
      'ix_login_activities_failure_reason_created_at',
    ];
    const runner = kit.dataSource.createQueryRunner();
    try {
      const migration = new ListingIndexes1763856000000();
      const perFilterAndSort = new IndexPerFilterAndSort1764028800000();
      await perFilterAndSort.down(runner);
      await migration.down(runner);
      const afterDown = [...(await indexNames('users')), ...(await indexNames('login_activities'))];
      expect(afterDown).not.toEqual(expect.arrayContaining([added[0]]));
      expect(afterDown).not.toEqual(expect.arrayContaining([added[1]]));
      expect(afterDown).not.toEqual(expect.arrayContaining([added[2]]));
      expect(afterDown).toEqual(
        expect.arrayContaining(['ix_users_org_id', 'ix_login_activities_user_id']),
      );
      await migration.up(runner);
      await perFilterAndSort.up(runner);
      const afterUp = [...(await indexNames('users')), ...(await indexNames('login_activities'))];
      expect(afterUp).toEqual(expect.arrayContaining(added));
    } finally {
      await runner.release();
    }
  }, 60_000);

  it('sorts a window’s matches by another time from the index carrying both, reading no row but the page’s', async () => {
    const path = '/v1/users';
    const params = { created_from: '2026-10-01T00:00:00Z', sort: 'updated_at', limit: '5' };
    await request(path, params, null); // counts the total the plan is priced from
    const mariadb =
      mysql && /mariadb/i.test((await kit.dataSource.query('SELECT VERSION() AS v'))[0].v);
    // MariaDB's per-index counters: rows read through the users' primary key (the row lookups).
    const primaryReads = async () => {
      const [row] = await kit.dataSource.query(
        `SELECT COALESCE(SUM(ROWS_READ), 0) AS n FROM information_schema.INDEX_STATISTICS
          WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'users' AND INDEX_NAME = 'PRIMARY'`,
      );
      return Number(row.n);
    };
    const [{ userstat }] = mariadb
      ? await kit.dataSource.query('SELECT @@GLOBAL.userstat AS userstat')
      : [{ userstat: 0 }];
    if (mariadb) await kit.dataSource.query('SET GLOBAL userstat = 1');
    try {
      const before = mariadb ? await primaryReads() : 0;
      const { body, statements } = await request(path, { ...params, page: '8' }, null);
      const read = mariadb ? (await primaryReads()) - before : 0;
      expect(body.pagination!.page_count).toBeGreaterThan(8);
      const page = statements.find((s) => s.name === 'page')!;
      expect(page.sql).toContain('ix_users_created_at_cover');
      // Its 40 rows are kept of the sort (a priority queue), the matches not materialized first.
      expect(page.sql).not.toMatch(/LIMIT \d{6,}/);
      if (mariadb) {
        // The page's 5 rows (the deferred join): the 40 entries sorted for it came from the index
        // alone (read through ix_users_created_at, each of the window's rows was looked up).
        expect(read).toBeLessThanOrEqual(5);
      } else {
        const explained: Record<string, unknown>[] = await kit.dataSource.query(
          `${mysql ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${page.sql}`,
          page.params,
        );
        const steps = explained.map((row) => String(mysql ? row.Extra : row.detail)).join('; ');
        expect(steps).toMatch(mysql ? /Using index/ : /COVERING INDEX ix_users_created_at_cover/);
      }
    } finally {
      if (mariadb) await kit.dataSource.query(`SET GLOBAL userstat = ${Number(userstat)}`);
    }
  });
});
