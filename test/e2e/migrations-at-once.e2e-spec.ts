import { createTestDatabase, startTestApp, TestApp, TestDatabase, testTarget } from '../kit';
import { runTs } from '../kit/processes';

/**
 * Several processes migrating one database at once, as instances started together with
 * DB_MIGRATIONS_RUN=true, or `npm run migration:run` beside them, do: one applies each migration,
 * the others wait for it and find nothing left to do.
 */
describe('migrations applied by several processes at once', () => {
  let database: TestDatabase;
  const apps: TestApp[] = [];
  const onMysql = (name: string, test: () => Promise<void>) =>
    testTarget === 'mysql' && it(name, test);

  beforeEach(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await database.drop();
  });

  it('npm run migration:run, six at once on a new database: each exits 0', async () => {
    const env = { DATABASE_URL: '', ...database.env };
    const runs = await Promise.all(
      Array.from({ length: 6 }, () => runTs('src/cli/migrate.cli.ts', [], env)),
    );
    expect(runs.map(({ code, stderr }) => ({ code, stderr }))).toEqual(
      Array(6).fill({ code: 0, stderr: '' }),
    );
    expect(runs.filter(({ stdout }) => /^applied \d+ migration/.test(stdout))).toHaveLength(1);
  });

  // In one process, SQLite's instances would wait for each other's lock in the thread they share.
  onMysql(
    'three instances started at once on a new database with DB_MIGRATIONS_RUN=true: each up at its first attempt',
    async () => {
      const started = await Promise.all(
        [1, 2, 3].map(() =>
          startTestApp({ database, env: { DB_MIGRATIONS_RUN: 'true' }, captureLogs: true }),
        ),
      );
      apps.push(...started);
      for (const app of started) {
        await app.http().get('/health/ready').expect(200);
        const failures = app
          .logs()
          .filter((line) => /database not available/.test(String(line.msg)));
        expect(failures).toEqual([]);
      }
    },
  );
});
