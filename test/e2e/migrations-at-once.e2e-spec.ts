import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { createTestDatabase, startTestApp, TestApp, TestDatabase, testTarget } from '../kit';
import { runTs } from '../kit/processes';

const WAITING = 'waiting for another process to finish its migrations (up to 600 s)';

/**
 * Until `waiters` other connections ask for the lock named `prefix…` (on a busy machine a process
 * can take longer than any fixed pause to start and reach it), then past their quiet first wait.
 */
async function untilWaiting(holder: Connection, prefix: string, waiters = 1): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [rows] = await holder.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST
        WHERE ID <> CONNECTION_ID() AND INFO LIKE ?`,
      [`%GET_LOCK(CONCAT('${prefix}%`],
    );
    if (Number(rows[0].n) >= waiters) break;
    if (Date.now() > deadline) throw new Error(`fewer than ${waiters} waited for ${prefix}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 3000));
}

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
    // On MySQL/MariaDB a run that finds another's turn under way says so, and nothing else.
    expect(
      runs.map(({ code, stderr }) => ({ code, stderr: stderr.replace(WAITING, '').trim() })),
    ).toEqual(Array(6).fill({ code: 0, stderr: '' }));
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

  onMysql(
    "a CLI and a server that wait for another process's migrations say so before they wait",
    async () => {
      // Another process's turn: the named lock held on a connection of its own.
      const holder = await createConnection(database.env.DATABASE_URL);
      const lockName = "CONCAT('listing-migrations:', SHA1(DATABASE()))";
      await holder.query(`SELECT GET_LOCK(${lockName}, 0)`);
      const cli = runTs('src/cli/migrate.cli.ts', [], { DATABASE_URL: '', ...database.env });
      const app = startTestApp({ database, env: { DB_MIGRATIONS_RUN: 'true' }, captureLogs: true });
      await untilWaiting(holder, 'listing-migrations:', 2);
      const releasedAt = Date.now();
      await holder.end();
      const [run, started] = await Promise.all([cli, app]);
      apps.push(started);
      expect(run).toMatchObject({ code: 0, stderr: `${WAITING}\n` });
      // Within its statements' bound (it tries again after), so for a shorter while than a CLI.
      const waiting = started
        .logs()
        .filter((line) =>
          /^waiting for another process to finish its migrations \(up to \d s\)$/.test(
            String(line.msg),
          ),
        );
      expect(waiting).toEqual([expect.objectContaining({ level: 40, context: 'Database' })]);
      // Written while it waited, not held back until the app had started.
      expect(Number(waiting[0].time)).toBeLessThan(releasedAt);
    },
  );

  onMysql('npm run seed that waits for another seed says so on stderr', async () => {
    const holder = await createConnection(database.env.DATABASE_URL);
    await holder.query("SELECT GET_LOCK(CONCAT('listing-seed:', SHA1(DATABASE())), 0)");
    const seed = runTs('src/cli/seed.cli.ts', ['--users', '3', '--activities', '3'], {
      DATABASE_URL: '',
      ...database.env,
    });
    await untilWaiting(holder, 'listing-seed:');
    await holder.end();
    const run = await seed;
    expect(run).toMatchObject({
      code: 0,
      stderr: 'waiting for another process to finish its seed (up to 600 s)\n',
    });
    expect(run.stdout).not.toContain('waiting');
  });

  onMysql(
    'three instances started at once on a new database with SEED_DEMO_DATA=true: seeded once',
    async () => {
      const started = await Promise.all(
        [1, 2, 3].map(() =>
          startTestApp({ database, env: { DB_MIGRATIONS_RUN: 'true', SEED_DEMO_DATA: 'true' } }),
        ),
      );
      apps.push(...started);
      const [users] = await started[0].dataSource.query('SELECT COUNT(*) AS n FROM users');
      const [roles] = await started[0].dataSource.query('SELECT COUNT(*) AS n FROM roles');
      // The demo data's 1,000 users and its roles, once (each instance told it was empty at boot).
      expect(Number(users.n)).toBe(1000);
      expect(Number(roles.n)).toBeLessThan(10);
    },
  );
});
