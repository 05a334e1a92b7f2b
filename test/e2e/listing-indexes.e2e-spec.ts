import { sortKeys } from '../../src/common/listing/listing-definition';
import { ListingIndexes1763856000000 } from '../../src/database/migrations/1763856000000-listing-indexes';
import { IndexPerFilterAndSort1764028800000 } from '../../src/database/migrations/1764028800000-index-per-filter-and-sort';
import { seedDemoData } from '../../src/database/seed/demo-data';
import { LoginActivitiesRepository } from '../../src/login-activities/login-activities.repository';
import { UsersRepository } from '../../src/users/users.repository';
import { startTestApp, TestApp } from '../kit';

/**
 * Every documented filter × sort is read through an index in the sort's order at any depth, or
 * refused up front with a 400 naming the sorts that are. The test EXPLAINs the statements a
 * request really runs (the count and the page, caught on their way to the driver), near the start
 * and in the far half (read from the end), on a few thousand realistic rows with fresh statistics.
 * A plan fails on a full scan of the listed table, and on a sort or a temporary table over it:
 * MySQL/MariaDB `type=ALL`, `Using filesort`, `Using temporary`; SQLite a plain `SCAN` or
 * `USE TEMP B-TREE`. Only the walk of the listed table (`t`) counts: the deferred join's outer
 * ORDER BY sorts the page's own rows (at most `limit`), and a keyset histogram groups its ids
 * into buckets (one row per 4096 ids) with a temporary table by design.
 */
describe('listing indexes (EXPLAIN of every filter and sort)', () => {
  let kit: TestApp;
  let mysql: boolean;
  const tokens = new Map<number | null, Promise<string>>();

  beforeAll(async () => {
    // Every request counts afresh, so that each runs its count.
    kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: '0' } });
    mysql = kit.dataSource.options.type === 'mysql';
    await seedDemoData(kit.dataSource, {
      users: 3000,
      activities: 6000,
      organizations: 25,
      batchSize: 500,
      now: new Date('2026-11-21T00:00:00.000Z'),
    });
    if (mysql) await kit.dataSource.query('ANALYZE TABLE users, login_activities');
    else await kit.dataSource.query('ANALYZE');
  }, 120_000); // Seeding a few thousand rows; jest applies no project-level timeout.

  afterAll(() => kit.close());

  /** What in a statement's plan reads the listed table without an index, or sorts it. */
  async function planProblems(sql: string, params: unknown[]): Promise<string[]> {
    const histogram = /GROUP BY/.test(sql);
    if (mysql) {
      const rows: Record<string, unknown>[] = await kit.dataSource.query(`EXPLAIN ${sql}`, params);
      return rows.flatMap((row) => {
        const table = String(row.table);
        const extra = String(row.Extra ?? '');
        const problems: string[] = [];
        if (['t', 'x'].includes(table) && String(row.type).toUpperCase() === 'ALL') {
          problems.push(`${table}: type=ALL`);
        }
        if (table === 't' && !histogram) {
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
    // walk along the primary key (MySQL's `type = index` on PRIMARY), stopped by the LIMIT. The
    // count of the same filters is checked on its own and has no such excuse.
    const walksPrimaryKey = /ORDER BY t\.id (ASC|DESC) LIMIT/.test(sql);
    const deferredJoin = /\) p JOIN/.test(sql);
    return rows
      .filter(
        ({ detail, parent }) =>
          (/^SCAN (t|x|users|login_activities)$/.test(detail) &&
            !(walksPrimaryKey && detail === 'SCAN t')) ||
          (/USE TEMP B-TREE/.test(detail) && !histogram && !(deferredJoin && parent === 0)),
      )
      .map(({ detail }) => detail);
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
      expect([200, 400]).toContain(reply.status);
      const statements = escape.mock.results
        .filter((result) => result.type === 'return')
        .map((result) => result.value as [string, unknown[]])
        .filter(([sql]) => /FROM `(users|login_activities)` t\b/.test(sql))
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
   * the end): `refused` with the 400's message, or the plan problems of every statement run.
   */
  async function check(
    path: string,
    params: Record<string, string>,
    organizationId: number | null,
  ): Promise<{ refused?: string; problems: string[] }> {
    const label = `?${new URLSearchParams(params).toString()} scope=${organizationId ?? '-'}`;
    const near = await request(path, { ...params, page: '2', limit: '5' }, organizationId);
    if (near.status === 400) {
      const [error] = near.body.errors ?? [];
      expect({ label, error }).toEqual({
        label,
        error: { parameter: expect.any(String), message: expect.stringMatching(/not served/) },
      });
      return { refused: `${error.parameter}: ${error.message}`, problems: [] };
    }
    const pages = near.body.pagination?.page_count ?? 0;
    const replies = [near];
    if (pages > 3) {
      const far = { ...params, page: String(Math.floor(pages * 0.9)), limit: '5' };
      replies.push(await request(path, far, organizationId));
    }
    const problems: string[] = [];
    for (const reply of replies) {
      for (const statement of reply.statements) {
        const found = await planProblems(statement.sql, statement.params);
        if (found.length) {
          problems.push(`${label} ${statement.name}: ${statement.sql} → ${found.join('; ')}`);
        }
      }
    }
    return { problems };
  }

  /** Each filter alone with each sort, unscoped and scoped: which are served, and their plans. */
  async function checkAll(
    path: string,
    filters: Record<string, string>,
    sorts: string[],
    scope: number,
  ): Promise<{ served: Record<string, string[]>; problems: string[]; checked: number }> {
    const served: Record<string, string[]> = {};
    const problems: string[] = [];
    let checked = 0;
    for (const [name, value] of [['', ''], ...Object.entries(filters)]) {
      for (const sort of sorts) {
        for (const organizationId of [null, scope]) {
          const params: Record<string, string> = name ? { [name]: value, sort } : { sort };
          const result = await check(path, params, organizationId);
          checked += 1;
          problems.push(...result.problems);
          if (!result.refused) {
            const key = `${name || '(none)'}${organizationId === null ? '' : ' (scoped)'}`;
            if (!sort.startsWith('-')) (served[key] ??= []).push(sort);
          } else if (organizationId !== null && name !== 'session_id') {
            problems.push(`?${name}&sort=${sort} refused under a scope: ${result.refused}`);
          }
        }
      }
    }
    return { served, problems, checked };
  }

  it('serves every users filter and sort from an index, or refuses it naming the sorts that are', async () => {
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
    const { served, problems, checked } = await checkAll('/v1/users', filters, sorts, scope);
    const every = ['id', 'created_at', 'updated_at', 'name', 'email'];
    // The README's table of filters and their sorts; a scoped token is served every sort.
    expect(
      Object.fromEntries(Object.entries(served).filter(([key]) => !/scoped/.test(key))),
    ).toEqual({
      '(none)': every,
      organization_id: every,
      role_id: ['id'],
      email: every,
      created_from: ['created_at'],
      created_to: ['created_at'],
      updated_from: ['updated_at'],
      updated_to: ['updated_at'],
    });
    for (const [key, scopedSorts] of Object.entries(served)) {
      if (/scoped/.test(key)) expect({ key, scopedSorts }).toEqual({ key, scopedSorts: every });
    }
    // Combined as the README shows, all at once, and keyset walks.
    for (const [params, organizationId] of [
      [{ organization_id: filters.organization_id, q: filters.q, sort: 'name' }, null],
      [{ q: filters.q, sort: '-created_at' }, scope],
      [{ ...filters, sort: '-updated_at' }, null],
      [{ after_id: '1500' }, null],
      [{ before_id: '1500', sort: '-id' }, scope],
      [{ role_id: filters.role_id, created_from: filters.created_from, sort: 'name' }, scope],
    ] as const) {
      const result = await check('/v1/users', params, organizationId);
      expect({ params, refused: result.refused }).toEqual({ params, refused: undefined });
      problems.push(...result.problems);
    }
    expect(checked).toBeGreaterThan(80);
    expect(problems).toEqual([]);
  }, 120_000);

  it('serves every login activity filter and sort from an index, or refuses it naming the sorts that are', async () => {
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
    const path = '/v1/login_activities';
    const { served, problems, checked } = await checkAll(path, filters, sorts, scope);
    const both = ['id', 'created_at'];
    expect(
      Object.fromEntries(Object.entries(served).filter(([key]) => !/scoped/.test(key))),
    ).toEqual({
      '(none)': both,
      user_id: both,
      user_email: both,
      success: both,
      authentication_method: both,
      oauth_provider: both,
      failure_reason: both,
      ip_address: both,
      session_id: ['id'],
      otp_required: both,
      created_from: ['created_at'],
      created_to: ['created_at'],
    });
    // Under a scope, a filter the organization's index does not carry goes with its own sorts.
    for (const [key, scopedSorts] of Object.entries(served)) {
      const own = key === 'session_id (scoped)' ? ['id'] : both;
      if (/scoped/.test(key)) expect({ key, scopedSorts }).toEqual({ key, scopedSorts: own });
    }
    for (const [params, organizationId] of [
      [
        {
          user_id: filters.user_id,
          success: 'false',
          created_from: filters.created_from,
          sort: '-created_at',
        },
        null,
      ],
      [{ success: 'false', created_from: filters.created_from, sort: 'created_at' }, null],
      [{ ...filters }, null],
      [{ after_id: '3000' }, null],
      [{ before_id: '3000', sort: '-id', success: 'false' }, scope],
      [{ failure_reason: 'otp_invalid', created_from: filters.created_from, sort: 'id' }, scope],
    ] as const) {
      const result = await check(path, params, organizationId);
      expect({ params, refused: result.refused }).toEqual({ params, refused: undefined });
      problems.push(...result.problems);
    }
    expect(checked).toBeGreaterThan(40);
    expect(problems).toEqual([]);
  }, 120_000);

  it('refuses a filter × sort no index serves with a 400 naming the sorts that go with it', async () => {
    const token = await tokenFor(null);
    const reply = await kit
      .as(token)
      .get('/v1/login_activities?failure_reason=otp_invalid&created_from=2026-10-01T00:00:00Z')
      .expect(400);
    expect(reply.body.errors).toEqual([
      {
        parameter: 'sort',
        message:
          'sort=id is not served by an index with failure_reason, created_from; with these filters, sort by created_at, -created_at',
      },
    ]);
    const combined = await kit
      .as(token)
      .get(
        '/v1/login_activities?authentication_method=oauth&oauth_provider=google&sort=-created_at',
      )
      .expect(400);
    expect(combined.body.errors).toEqual([
      {
        parameter: 'oauth_provider',
        message: expect.stringMatching(
          /^authentication_method, oauth_provider together are not served by one index/,
        ),
      },
    ]);
    // A prefix of name or e-mail has no index order: checked within one organization.
    const search = await kit.as(token).get('/v1/users?q=ad&sort=name').expect(400);
    expect(search.body.errors).toEqual([
      { parameter: 'q', message: expect.stringMatching(/^q is not served by one index/) },
    ]);
    await kit.as(token).get('/v1/users?q=ad&organization_id=1&sort=-name').expect(200);
  });

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
        // `page ids`: the page's ids are walked first, then read (the deferred join).
        names: [
          ...new Set(
            statements.flatMap((statement) =>
              /\) p JOIN/.test(statement.sql) ? ['page ids', 'page'] : [statement.name],
            ),
          ),
        ],
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
        names: ['count', 'page'],
        steps: primaryKeyWalk,
      });
    }
    // A listing with lookups (users: role and organization names) walks its own primary key as
    // well, and looks each of the page's rows up by primary key, never starting from the lookup
    // table (with joins, the optimizer started from roles and sorted).
    const usersPage = await plan('/v1/users', {}, 0, 20);
    expect(usersPage.names).toEqual(['count', 'page']);
    expect(usersPage.steps[0]).toEqual(primaryKeyWalk[0]);
    const lookupSteps = mysql
      ? usersPage.steps.slice(1)
      : usersPage.steps.filter((step) => /\b(SCAN|SEARCH) l\b/.test(step));
    const lookupByPrimaryKey = mysql
      ? 'l PRIMARY'
      : expect.stringMatching(/^SEARCH l USING INTEGER PRIMARY KEY/);
    expect(lookupSteps).toEqual([lookupByPrimaryKey, lookupByPrimaryKey]);
    // Deeper, filtered or sorted otherwise: the page's ids are walked first.
    const deferred = ['count', 'page ids', 'page'];
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
});
