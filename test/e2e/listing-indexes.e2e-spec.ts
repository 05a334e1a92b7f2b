import { sortKeys } from '../../src/common/listing/listing-definition';
import { ListingIndexes1763856000000 } from '../../src/database/migrations/1763856000000-listing-indexes';
import { IndexPerFilterAndSort1764028800000 } from '../../src/database/migrations/1764028800000-index-per-filter-and-sort';
import { LoginActivitiesIpAddressNocase1764892800000 } from '../../src/database/migrations/1764892800000-login-activities-ip-address-nocase';
import { seedDemoData } from '../../src/database/seed/demo-data';
import { LoginActivitiesRepository } from '../../src/login-activities/login-activities.repository';
import { UsersRepository } from '../../src/users/users.repository';
import {
  createTestDatabase,
  listingPlans,
  servedListings,
  startTestApp,
  TestApp,
  testTarget,
} from '../kit';

/**
 * Every documented filter × sort, alone and in pairs, runs the plan the planner chose
 * (`listing-planner.ts`), at any depth, on a few thousand realistic rows with fresh statistics:
 * the kit's `listingPlans` EXPLAINs the statements each request really runs.
 */
describe('listing indexes (EXPLAIN of every filter and sort)', () => {
  let kit: TestApp;
  let mysql: boolean;
  let plans: ReturnType<typeof listingPlans>;

  beforeAll(async () => {
    // Totals are cached as in production: a pair's plan is priced from its filters' totals.
    kit = await startTestApp({ env: { COUNT_CACHE_WARMUP: 'false', RATE_LIMIT_PER_MINUTE: '0' } });
    mysql = kit.dataSource.options.type === 'mysql';
    const tables = servedListings(kit).map((definition) => definition.table);
    await seedDemoData(kit.dataSource, {
      users: 3000,
      activities: 6000,
      organizations: 25,
      batchSize: 500,
      now: new Date('2026-11-21T00:00:00.000Z'),
    });
    if (mysql) await kit.dataSource.query(`ANALYZE TABLE ${tables.join(', ')}`);
    else await kit.dataSource.query('ANALYZE');
    plans = listingPlans(kit);
  }, 120_000); // Seeding a few thousand rows; jest applies no project-level timeout.

  afterAll(() => kit.close());

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
    const result = await plans.checkAll('/v1/users', filters, sorts, scope, paths);
    for (const [params, organizationId] of [
      [{ ...filters, sort: '-updated_at' }, null],
      [{ after_id: '1500' }, null],
      [{ before_id: '1500', sort: '-id' }, scope],
      [{ after_id: '1500', sort: 'name' }, null],
    ] as const) {
      result.problems.push(
        ...(await plans.check('/v1/users', params, organizationId, paths)).problems,
      );
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
    const result = await plans.checkAll(path, filters, sorts, scope, paths);
    for (const [params, organizationId] of [
      [{ ...filters }, null],
      [{ after_id: '3000' }, null],
      [{ before_id: '3000', sort: '-id', success: 'false' }, scope],
      [{ after_id: '3000', sort: '-created_at', success: 'false' }, null],
    ] as const) {
      result.problems.push(...(await plans.check(path, params, organizationId, paths)).problems);
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
      const { statements } = await plans.request(
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

  it('reads q sorted by name or e-mail as a union taking of the other column only rows that share less of q', async () => {
    if (!mysql) return;
    const [user] = await kit.dataSource.query(
      'SELECT name FROM users ORDER BY id LIMIT 1 OFFSET 1234',
    );
    const q = String(user.name).slice(0, 3);
    for (const [sort, other] of [
      ['email', 'ix_users_name_unshared'],
      ['-name', 'ix_users_email_unshared'],
    ]) {
      const reply = await plans.request('/v1/users', { q, sort, limit: '5' }, null);
      const union = reply.statements.find(({ sql }) => sql.includes(' UNION '));
      expect({ sort, union: union?.sql }).toEqual({
        sort,
        union: expect.stringContaining(
          `FORCE INDEX (\`${other}\`) WHERE (t.\`name_email_shared\` IN (0, 1, 2) AND`,
        ),
      });
      const column = sort.replace('-', '');
      const expected: { id: number }[] = await kit.dataSource.query(
        `SELECT id FROM users WHERE name LIKE ? OR email LIKE ? ORDER BY ${column} ${sort.startsWith('-') ? 'DESC' : 'ASC'}, id ${sort.startsWith('-') ? 'DESC' : 'ASC'} LIMIT 5`,
        [`${q}%`, `${q}%`],
      );
      const data = (reply.body as unknown as { data: { id: number }[] }).data;
      expect(data.map((row) => row.id)).toEqual(expected.map((row) => Number(row.id)));
    }
  });

  it('finds q by name or e-mail however much of it they share: case, spaces, accents, zero-width characters', async () => {
    const rows: [string, string][] = [
      ['Mark Twain', 'mark.twain@shared.test'],
      ['Marta Diaz', 'diaz.marta@shared.test'],
      ['Zed Marx', 'marx.zed@shared.test'],
      ['MARIO Rossi', 'Mario.Rossi@shared.test'],
      ['Märta Öst', 'marta.ost@shared.test'],
      ['Ma\u200brk Zero', 'mark.zero@shared.test'],
      ['Ma rk Space', 'mark.space@shared.test'],
      ['Marie-Anne Lee', 'marie-anne.lee@shared.test'],
      ['Marie-Annette Ko', 'marie-ann@shared.test'],
      ['marc Low', 'MARC.LOW@shared.test'],
      // Name and e-mail differ in collation on MariaDB: K (the Kelvin sign) matches this e-mail only.
      ['kimberly', 'kimberly@shared.test'],
    ];
    const ids = new Set<number>();
    for (const [name, email] of rows) ids.add((await kit.data.user({ name, email })).id);
    // As in a database created with MariaDB's default collation: only e-mail's is set.
    const nameIn = (collation: string) =>
      kit.dataSource.query(
        `ALTER TABLE users MODIFY name VARCHAR(255) NOT NULL COLLATE utf8mb4_${collation}`,
      );
    if (mysql) await nameIn('general_ci');
    try {
      for (const q of [
        'Mar',
        'mar',
        'Ma',
        'MARI',
        'Marie-Anne',
        'Marie-Annet',
        'Märt',
        'Ma r',
        'Ma\u200br',
        'Zed',
        '\u212aimb',
        'Kimb',
      ]) {
        for (const sort of ['email', '-email', 'name', '-name', 'id']) {
          const column = sort.replace('-', '');
          const direction = sort.startsWith('-') ? 'DESC' : 'ASC';
          const expected: { id: number }[] = await kit.dataSource.query(
            `SELECT id FROM users WHERE (name LIKE ? OR email LIKE ?) AND email LIKE '%@shared.test' ORDER BY ${column} ${direction}, id ${direction}`,
            [`${q}%`, `${q}%`],
          );
          const seen: number[] = [];
          let page = 1;
          for (;;) {
            const reply = await kit
              .as(await kit.token())
              .get(
                `/v1/users?${new URLSearchParams({ q, sort, limit: '100', page: String(page) })}`,
              )
              .expect(200);
            seen.push(
              ...reply.body.data
                .map((row: { id: number }) => row.id)
                .filter((id: number) => ids.has(id)),
            );
            if (page >= reply.body.pagination.page_count) break;
            page += 1;
          }
          expect({ q, sort, ids: seen }).toEqual({
            q,
            sort,
            ids: expected.map((row) => Number(row.id)),
          });
        }
      }
    } finally {
      if (mysql) await nameIn('unicode_ci');
    }
  }, 120_000);

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

  it('reverts and re-applies the ip_address collation, keeping rows, indexes and ids', async () => {
    const insert = async (ip: string): Promise<number> => {
      await kit.dataSource.query(
        'INSERT INTO login_activities (user_email, authentication_method, ip_address, otp_required, success, created_at) ' +
          "VALUES ('a@b.c', 'password', ?, 0, 1, '2026-01-01 00:00:00')",
        [ip],
      );
      const [{ id }] = await kit.dataSource.query('SELECT MAX(id) AS id FROM login_activities');
      return Number(id);
    };
    const state = async () => {
      const [{ n }] = await kit.dataSource.query('SELECT COUNT(*) AS n FROM login_activities');
      const rows: { Key_name?: string; name?: string }[] = await kit.dataSource.query(
        mysql ? 'SHOW INDEX FROM login_activities' : 'PRAGMA index_list(login_activities)',
      );
      return {
        rows: Number(n),
        indexes: [...new Set(rows.map((r) => r.Key_name ?? r.name))].sort(),
      };
    };
    // The highest id handed out is above every row's: the rebuild must not hand it out again.
    const deleted = await insert('192.0.2.99');
    await kit.dataSource.query('DELETE FROM login_activities WHERE id = ?', [deleted]);
    const before = await state();
    const runner = kit.dataSource.createQueryRunner();
    const migration = new LoginActivitiesIpAddressNocase1764892800000();
    try {
      await migration.down(runner);
      expect(await state()).toEqual(before);
      await migration.up(runner);
      expect(await state()).toEqual(before);
    } finally {
      await runner.release();
    }
    const id = await insert('2001:DB8::A');
    expect(id).toBeGreaterThan(deleted);
    const [{ found }] = await kit.dataSource.query(
      "SELECT COUNT(*) AS found FROM login_activities WHERE ip_address = '2001:db8::a'",
    );
    expect(Number(found)).toBe(1);
    await kit.dataSource.query('DELETE FROM login_activities WHERE id = ?', [id]);
  }, 60_000);

  it('sorts a window’s matches by another time from the index carrying both, reading no row but the page’s', async () => {
    const path = '/v1/users';
    const params = { created_from: '2026-10-01T00:00:00Z', sort: 'updated_at', limit: '5' };
    // Counts the total the plan is priced from. Near the start, the walk in update order brought
    // to the window's hours (`walkBoundOf`) is cheaper: the middle page sorts the matches.
    const first = await plans.request(path, params, null);
    const middle = Math.ceil(first.body.pagination!.page_count / 2);
    expect(middle).toBeGreaterThan(8);
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
      const { statements } = await plans.request(path, { ...params, page: String(middle) }, null);
      const read = mariadb ? (await primaryReads()) - before : 0;
      const page = statements.find((s) => s.name === 'page')!;
      expect(page.sql).toContain('ix_users_created_at_cover');
      // Its rows up to the page are kept of the sort (a priority queue), not materialized first.
      expect(page.sql).not.toMatch(/LIMIT \d{6,}/);
      if (mariadb) {
        // The page's 5 rows (the deferred join): the entries sorted for it came from the index
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

describe('users.name in a database created with another default collation', () => {
  it("reads names in e-mail's collation, as in a database created in it", async () => {
    if (testTarget !== 'mysql') return;
    // MariaDB's own default: it reads `ß` as `s`, where e-mail's collation reads it as `ss`.
    const database = await createTestDatabase('mysql', { collation: 'utf8mb4_general_ci' });
    const kit = await startTestApp({ database });
    try {
      const [column] = await kit.dataSource.query(
        "SELECT COLLATION_NAME AS collation FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'users' AND COLUMN_NAME = 'name'",
      );
      expect(column.collation).toBe('utf8mb4_unicode_ci');
      await kit.data.user({ name: 'Samuel Beck', email: 'beck@example.test' });
      const namesFor = async (q: string) => {
        const reply = await kit
          .as(await kit.token())
          .get(`/v1/users?${new URLSearchParams({ q, sort: 'name' })}`)
          .expect(200);
        return reply.body.data.map((user: { name: string }) => user.name);
      };
      expect(await namesFor('Samu')).toEqual(['Samuel Beck']);
      // In general_ci `ß` matches `S`; in e-mail's collation, as on the database's other columns, not.
      expect(await namesFor('ßamu')).toEqual([]);
    } finally {
      await kit.close();
      await database.drop();
    }
  }, 60_000);
});

describe('text columns in a database created in latin1 (MariaDB’s own default)', () => {
  it('are utf8mb4: a filter value latin1 cannot hold finds its rows, not a 500', async () => {
    if (testTarget !== 'mysql') return;
    const database = await createTestDatabase('mysql', { collation: 'latin1_swedish_ci' });
    const kit = await startTestApp({ database });
    try {
      const latin1 = await kit.dataSource.query(
        "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('organizations', 'roles', 'users', 'login_activities', 'api_tokens') AND CHARACTER_SET_NAME <> 'utf8mb4'",
      );
      expect(latin1).toEqual([]);
      const omega = await kit.data.loginActivity({ session_id: 'sess_Ωmega' });
      await kit.data.loginActivity({ session_id: 'sess_plain' });
      const api = await kit.client({ scopes: ['login_activities:read'] });
      for (const session of ['sess_Ωmega', 'Ω']) {
        const reply = await api
          .get(`/v1/login_activities?${new URLSearchParams({ session_id: session })}`)
          .expect(200);
        const ids = reply.body.data.map((item: { id: number }) => item.id);
        expect(ids).toEqual(session === 'Ω' ? [] : [omega.id]);
      }
    } finally {
      await kit.close();
      await database.drop();
    }
  }, 60_000);
});
