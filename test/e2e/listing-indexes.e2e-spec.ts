import type { Type } from '@nestjs/common';
import type { Principal } from '../../src/common/auth/principal';
import { buildCriteria } from '../../src/common/listing/listing-criteria';
import { sortKeys } from '../../src/common/listing/listing-definition';
import type { ListingQuery } from '../../src/common/listing/listing-query.dto';
import type { ListingRepository } from '../../src/common/listing/listing.repository';
import { QueryValidationPipe } from '../../src/common/validation/query-validation.pipe';
import { ListingIndexes1763856000000 } from '../../src/database/migrations/1763856000000-listing-indexes';
import { seedDemoData } from '../../src/database/seed/demo-data';
import { ListLoginActivitiesQueryDto } from '../../src/login-activities/dto/list-login-activities-query.dto';
import { LoginActivitiesRepository } from '../../src/login-activities/login-activities.repository';
import { ListUsersQueryDto } from '../../src/users/dto/list-users-query.dto';
import { UsersRepository } from '../../src/users/users.repository';
import { startTestApp, TestApp } from '../kit';

/**
 * Every filter and every sort of both listings, alone, combined and under an organization scope,
 * must be served by an index: the test EXPLAINs the statements the repository really runs (the
 * count and the page's id query) on a few thousand realistic rows with fresh statistics.
 * MySQL/MariaDB: no `type = ALL` row. SQLite: no plain `SCAN <table>` (a scan along an index is
 * the equivalent of MySQL's `type = index` and passes, as it does there). The test fails without
 * the listing-indexes migration (e.g. `success=false` counts become `type=ALL`).
 */
describe('listing indexes (EXPLAIN of every filter and sort)', () => {
  let kit: TestApp;
  let mysql: boolean;
  const pipe = new QueryValidationPipe();

  beforeAll(async () => {
    kit = await startTestApp();
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

  const platform: Principal = {
    tokenId: 1,
    tokenName: 'platform',
    scopes: new Set(),
    organizationId: null,
  };

  /** The rows a plan reads a listed table from without an index, as readable lines. */
  async function fullScans(sql: string, params: unknown[]): Promise<string[]> {
    if (mysql) {
      const rows: Record<string, unknown>[] = await kit.dataSource.query(`EXPLAIN ${sql}`, params);
      return (
        rows
          // Only the listed table matters: the page's materialized ids (`<derived2>`) and the
          // lookups of a page's rows are at most a page's worth of reads.
          .filter((row) => ['t', 'x'].includes(String(row.table)))
          .filter((row) => String(row.type).toUpperCase() === 'ALL')
          .map((row) => `${String(row.table)}: type=ALL (${String(row.Extra ?? '')})`)
      );
    }
    const rows: { detail: string }[] = await kit.dataSource.query(
      `EXPLAIN QUERY PLAN ${sql}`,
      params,
    );
    // SQLite keeps a table in its primary key's order: `SCAN t` for an `ORDER BY id` page is the
    // walk along the primary key (MySQL's `type = index` on PRIMARY), stopped by the LIMIT. The
    // count of the same filters is checked on its own and has no such excuse.
    const walksPrimaryKey = /ORDER BY t\.id (ASC|DESC) LIMIT/.test(sql);
    return rows
      .map((row) => row.detail)
      .filter((detail) => /^SCAN (t|x|users|login_activities)$/.test(detail))
      .filter((detail) => !(walksPrimaryKey && detail === 'SCAN t'));
  }

  /** The criteria of one request: its query parameters, validated, under an organization scope. */
  async function criteriaFor(
    repository: ListingRepository<{ id: number }>,
    dto: Type<unknown>,
    params: Record<string, string>,
    organizationId: number | null,
  ) {
    const query = (await pipe.transform(params, { type: 'query', metatype: dto })) as ListingQuery;
    return buildCriteria(repository.definition, query, { ...platform, organizationId });
  }

  /** The statements of one request that read a table without an index, described. */
  async function unindexed(
    repository: ListingRepository<{ id: number }>,
    dto: Type<unknown>,
    params: Record<string, string>,
    organizationId: number | null,
  ): Promise<string[]> {
    const criteria = await criteriaFor(repository, dto, params, organizationId);
    const problems: string[] = [];
    for (const statement of repository.describeQueries(criteria, 40, 20)) {
      const scans = await fullScans(statement.sql, statement.params);
      if (scans.length) {
        const label = `?${new URLSearchParams(params).toString()} scope=${organizationId ?? '-'}`;
        problems.push(`${label} ${statement.name}: ${statement.sql} → ${scans.join('; ')}`);
      }
    }
    return problems;
  }

  /** Each filter alone, each sort alone, each filter with each sort; unscoped and scoped. */
  function combinations(filters: Record<string, string>, sorts: string[]) {
    const out: Record<string, string>[] = [];
    for (const sort of sorts) out.push({ sort });
    for (const [name, value] of Object.entries(filters)) {
      out.push({ [name]: value });
      for (const sort of sorts) out.push({ [name]: value, sort });
    }
    out.push({ ...filters });
    return out;
  }

  it('serves every users filter and sort from an index, scoped or not', async () => {
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
    const problems: string[] = [];
    let checked = 0;
    for (const params of combinations(filters, sortKeys(repository.definition))) {
      for (const scope of [null, Number(user.organization_id)]) {
        problems.push(...(await unindexed(repository, ListUsersQueryDto, params, scope)));
        checked += 1;
      }
    }
    problems.push(...(await unindexed(repository, ListUsersQueryDto, { after_id: '1500' }, null)));
    problems.push(
      ...(await unindexed(repository, ListUsersQueryDto, { before_id: '1500', sort: '-id' }, 3)),
    );
    expect(checked).toBeGreaterThan(150);
    expect(problems).toEqual([]);
  }, 60_000);

  it('serves every login activity filter and sort from an index, scoped or not', async () => {
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
    const dto = ListLoginActivitiesQueryDto;
    const scope = Number(activity.organization_id);
    const problems: string[] = [];
    let checked = 0;
    for (const params of combinations(filters, sortKeys(repository.definition))) {
      for (const organizationId of [null, scope]) {
        problems.push(...(await unindexed(repository, dto, params, organizationId)));
        checked += 1;
      }
    }
    problems.push(...(await unindexed(repository, dto, { after_id: '3000' }, null)));
    problems.push(
      ...(await unindexed(
        repository,
        dto,
        { before_id: '3000', sort: '-id', success: 'false' },
        scope,
      )),
    );
    expect(checked).toBeGreaterThan(80);
    expect(problems).toEqual([]);
  }, 60_000);

  it('reads a short walk along the primary key straight, without the deferred join, lookups by primary key', async () => {
    const plan = async (
      repository: ListingRepository<{ id: number }>,
      dto: Type<unknown>,
      params: Record<string, string>,
      offset: number,
      limit: number,
    ) => {
      const criteria = await criteriaFor(repository, dto, params, null);
      const statements = repository.describeQueries(criteria, offset, limit);
      const page = statements.find((statement) => statement.name === 'page')!;
      const rows: Record<string, unknown>[] = await kit.dataSource.query(
        `${mysql ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${page.sql}`,
        page.params,
      );
      return {
        names: statements.map((statement) => statement.name),
        // MySQL/MariaDB: table and key of each row; SQLite: the plan's lines.
        steps: rows.map((row) =>
          mysql ? `${String(row.table)} ${String(row.key)}` : String(row.detail),
        ),
      };
    };
    const activities = kit.app.get(LoginActivitiesRepository);
    const dto = ListLoginActivitiesQueryDto;
    const primaryKeyWalk = mysql ? ['t PRIMARY'] : [expect.stringMatching(/^(SCAN|SEARCH) t\b/)];
    for (const [params, offset, limit] of [
      [{}, 0, 100],
      [{}, 100, 100],
      [{ after_id: '3000' }, 0, 20],
      [{ before_id: '3000', sort: '-id' }, 0, 20],
    ] as const) {
      const { names, steps } = await plan(activities, dto, params, offset, limit);
      expect({ params, names, steps }).toEqual({
        params,
        names: ['count', 'page'],
        steps: primaryKeyWalk,
      });
    }
    // A listing with lookups (users: role and organization names) walks its own primary key as
    // well, and looks each of the page's rows up by primary key, never starting from the lookup
    // table (with joins, the optimizer started from roles and sorted).
    const users = kit.app.get(UsersRepository);
    const usersPage = await plan(users, ListUsersQueryDto, {}, 0, 20);
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
    expect((await plan(activities, dto, {}, 200, 20)).names).toEqual(deferred);
    expect((await plan(activities, dto, { success: 'false' }, 0, 20)).names).toEqual(deferred);
    expect((await plan(activities, dto, { sort: '-created_at' }, 0, 20)).names).toEqual(deferred);
    expect((await plan(users, ListUsersQueryDto, { sort: 'name' }, 0, 20)).names).toEqual(deferred);
  });

  it('reverts and re-applies its migration cleanly', async () => {
    const indexNames = async (table: string): Promise<string[]> => {
      const rows: { Key_name?: string; name?: string }[] = await kit.dataSource.query(
        mysql ? `SHOW INDEX FROM ${table}` : `PRAGMA index_list(${table})`,
      );
      return rows.map((row) => String(row.Key_name ?? row.name));
    };
    const added = ['ix_users_org_created_at', 'ix_login_activities_success'];
    const runner = kit.dataSource.createQueryRunner();
    try {
      const migration = new ListingIndexes1763856000000();
      await migration.down(runner);
      const afterDown = [...(await indexNames('users')), ...(await indexNames('login_activities'))];
      expect(afterDown).not.toEqual(expect.arrayContaining([added[0]]));
      expect(afterDown).not.toEqual(expect.arrayContaining([added[1]]));
      expect(afterDown).toEqual(
        expect.arrayContaining(['ix_users_org_id', 'ix_login_activities_user_id']),
      );
      await migration.up(runner);
      const afterUp = [...(await indexNames('users')), ...(await indexNames('login_activities'))];
      expect(afterUp).toEqual(expect.arrayContaining(added));
    } finally {
      await runner.release();
    }
  }, 60_000);
});
