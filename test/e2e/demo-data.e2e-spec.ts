import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { applyMigrations } from '../../src/database/apply-migrations';
import { buildDataSourceOptions } from '../../src/database/data-source-options';
import { seedDemoData } from '../../src/database/seed/demo-data';
import { createTestDatabase, TestDatabase } from '../kit';
import { runTs } from '../kit/processes';

async function open(database: TestDatabase): Promise<DataSource> {
  const config = loadConfig({ NODE_ENV: 'test', ...database.env });
  const source = await new DataSource(buildDataSourceOptions(config)).initialize();
  await applyMigrations(source);
  return source;
}

const NOW = new Date('2026-11-22T00:00:00.000Z');

describe('demo data', () => {
  const databases: TestDatabase[] = [];
  const sources: DataSource[] = [];

  afterAll(async () => {
    for (const source of sources) await source.destroy();
    for (const database of databases) await database.drop();
  });

  async function seeded(seed: number): Promise<DataSource> {
    const database = await createTestDatabase();
    databases.push(database);
    const source = await open(database);
    sources.push(source);
    await seedDemoData(source, { users: 200, activities: 2000, seed, now: NOW });
    return source;
  }

  it('is deterministic and realistic', async () => {
    const [first, second] = [await seeded(7), await seeded(7)];
    const rows = (source: DataSource) =>
      source.query(
        'SELECT user_email, authentication_method, oauth_provider, ip_address, otp_required, success, failure_reason, user_id, session_id FROM login_activities ORDER BY id',
      );
    const firstRows = await rows(first);
    expect(await rows(second)).toEqual(firstRows);
    expect(firstRows).toHaveLength(2000);

    const [stats] = await first.query(`SELECT
        SUM(CASE WHEN success = 0 AND failure_reason IS NOT NULL THEN 1 ELSE 0 END) AS failures_with_reason,
        SUM(CASE WHEN success = 0 AND failure_reason IS NULL THEN 1 ELSE 0 END) AS failures_without_reason,
        SUM(CASE WHEN success = 1 AND (session_id IS NULL OR failure_reason IS NOT NULL) THEN 1 ELSE 0 END) AS bad_successes,
        SUM(CASE WHEN authentication_method = 'oauth' AND oauth_provider IS NOT NULL THEN 1 ELSE 0 END) AS oauth_with_provider,
        SUM(CASE WHEN authentication_method <> 'oauth' AND oauth_provider IS NOT NULL THEN 1 ELSE 0 END) AS provider_without_oauth,
        SUM(CASE WHEN user_id IS NULL THEN 1 ELSE 0 END) AS unknown_emails,
        SUM(CASE WHEN user_id IS NULL AND organization_id IS NOT NULL THEN 1 ELSE 0 END) AS unknown_with_org
      FROM login_activities`);
    expect(Number(stats.failures_with_reason)).toBeGreaterThan(100);
    expect(Number(stats.failures_without_reason)).toBe(0);
    expect(Number(stats.bad_successes)).toBe(0);
    expect(Number(stats.oauth_with_provider)).toBeGreaterThan(100);
    expect(Number(stats.provider_without_oauth)).toBe(0);
    expect(Number(stats.unknown_emails)).toBeGreaterThan(50);
    expect(Number(stats.unknown_with_org)).toBe(0);

    const [orphans] = await first.query(
      'SELECT COUNT(*) AS n FROM login_activities a LEFT JOIN users u ON u.id = a.user_id WHERE a.user_id IS NOT NULL AND (u.id IS NULL OR u.email <> a.user_email OR u.organization_id <> a.organization_id)',
    );
    expect(Number(orphans.n)).toBe(0);
  });

  it('is loaded by several `npm run seed` at once, each waiting for the others', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const env = { DATABASE_URL: '', ...database.env };
    // Migrated first: the seeds then only write rows.
    const migrated = await runTs('src/cli/seed.cli.ts', ['--users', '0', '--activities', '0'], env);
    expect(migrated.code).toBe(0);
    const seeds = await Promise.all(
      [1, 2, 3].map((seed) =>
        runTs(
          'src/cli/seed.cli.ts',
          ['--users', '40', '--activities', '2000', '--seed', String(seed)],
          env,
        ),
      ),
    );
    // One that finds another's turn under way says so (MySQL/MariaDB), and nothing else.
    const waiting =
      /^waiting for another process to finish its (seed|migrations) \(up to 600 s\)$/gm;
    expect(
      seeds.map(({ code, stderr }) => ({ code, stderr: stderr.replace(waiting, '').trim() })),
    ).toEqual(Array(3).fill({ code: 0, stderr: '' }));
    const source = await open(database);
    sources.push(source);
    const [users] = await source.query('SELECT COUNT(*) AS n FROM users');
    const [activities] = await source.query('SELECT COUNT(*) AS n FROM login_activities');
    expect([Number(users.n), Number(activities.n)]).toEqual([120, 6000]);
  });

  it('is loaded by `npm run seed` with the sizes asked for', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const result = await runTs('src/cli/seed.cli.ts', ['--users', '50', '--activities', '300'], {
      DATABASE_URL: '',
      ...database.env,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('seeded');
    const source = await open(database);
    sources.push(source);
    const [users] = await source.query('SELECT COUNT(*) AS n FROM users');
    const [activities] = await source.query('SELECT COUNT(*) AS n FROM login_activities');
    expect([Number(users.n), Number(activities.n)]).toEqual([50, 300]);

    const bad = await runTs('src/cli/seed.cli.ts', ['--users', 'many'], database.env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--users must be a whole number');
    // Users need an organization to belong to: a usage error, not the database's foreign key.
    const orphans = await runTs('src/cli/seed.cli.ts', ['--organizations', '0'], database.env);
    expect(orphans.code).toBe(2);
    expect(orphans.stderr).toContain('--organizations must be at least 1');
    const stray = await runTs('src/cli/migrate.cli.ts', ['--bogus'], database.env);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('unexpected argument "--bogus"');

    const help = await runTs('src/cli/seed.cli.ts', ['--help'], database.env);
    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toMatch(/^usage: npm run seed/);
    const migrateHelp = await runTs('src/cli/migrate.cli.ts', ['--help'], database.env);
    expect([migrateHelp.code, migrateHelp.stderr]).toEqual([0, '']);
    expect(migrateHelp.stdout).toMatch(/^usage: npm run migration:run/);

    const [before] = await source.query('SELECT COUNT(*) AS n FROM organizations');
    const none = await runTs('src/cli/seed.cli.ts', ['--users', '0', '--activities', '0'], {
      DATABASE_URL: '',
      ...database.env,
    });
    expect(none.code).toBe(0);
    const [after] = await source.query('SELECT COUNT(*) AS n FROM organizations');
    expect(Number(after.n)).toBe(Number(before.n));
  });
});
