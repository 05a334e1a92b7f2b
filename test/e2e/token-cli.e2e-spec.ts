import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { TOKEN_PATTERN } from '../../src/auth/token-format';
import { registeredScopeNames } from '../../src/common/auth/scope-registry';
import { loadListingScopes } from '../../src/cli/cli-support';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { buildDataSourceOptions } from '../../src/database/data-source-options';
import { createTestDatabase, OrganizationRow, startTestApp, TestApp, TestDatabase } from '../kit';
import { runTs } from '../kit/processes';

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The tables a database holds. */
async function tablesOf(database: TestDatabase): Promise<string[]> {
  const config = loadConfig({ NODE_ENV: 'test', DB_MIGRATIONS_RUN: 'false', ...database.env });
  const source = await new DataSource(buildDataSourceOptions(config)).initialize();
  try {
    const rows: { name: string }[] = await source.query(
      config.database.kind === 'mysql'
        ? 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()'
        : "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    );
    return rows.map(({ name }) => name);
  } finally {
    await source.destroy();
  }
}

/**
 * `npm run token` as an operator runs it, in a child process, against this test's database
 * (the temp SQLite file through SQLITE_PATH, or the throw-away MySQL database).
 */
describe('token CLI (npm run token)', () => {
  let kit: TestApp;
  let acme: OrganizationRow;

  beforeAll(async () => {
    kit = await startTestApp();
    acme = await kit.data.organization({ name: 'Acme' });
    await kit.data.user({ organization_id: acme.id });
    await kit.data.user();
  });
  afterAll(() => kit.close());

  /** `npm run token -- …`, or (faster, same script) node with the same loader. */
  const run = (viaNpm: boolean, args: string[]): Promise<CliResult> => {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'silent' };
    delete env.DATABASE_URL;
    delete env.SQLITE_PATH;
    Object.assign(env, kit.database.env);
    return new Promise((resolve) => {
      const [command, commandArgs] = viaNpm
        ? ['npm', ['run', '-s', 'token', '--', ...args]]
        : [process.execPath, ['-r', '@swc-node/register', 'src/cli/token.cli.ts', ...args]];
      execFile(
        command,
        commandArgs,
        { cwd: join(__dirname, '..', '..'), env, timeout: 30_000 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });
  };
  const cli = (...args: string[]) => run(false, args);
  const lastLine = (text: string) => text.trimEnd().split('\n').pop() ?? '';

  it('creates an organization-scoped token, printed as the last line, that sees only that organization', async () => {
    const created = await run(true, [
      'create',
      '--name',
      'acme-siem',
      '--scopes',
      'users:read,login_activities:read',
      '--organization',
      String(acme.id),
      '--expires-in',
      '30d',
    ]);
    expect(created.code).toBe(0);
    const token = lastLine(created.stdout);
    expect(token).toMatch(TOKEN_PATTERN);
    expect(created.stdout).toContain(`organization: ${acme.id}`);

    const [row] = await kit.dataSource.query(
      'SELECT organization_id, scopes, expires_at FROM api_tokens WHERE name = ?',
      ['acme-siem'],
    );
    expect(Number(row.organization_id)).toBe(acme.id);
    expect(row.scopes).toBe('users:read login_activities:read');
    expect(row.expires_at).not.toBeNull();

    const response = await kit
      .http()
      .get('/v1/users')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(response.headers['x-total-count']).toBe('1');
    expect(response.body.data[0].organization_id).toBe(acme.id);
  }, 30_000);

  it('refuses an expiry past year 9999, which the database cannot hold, and makes no token', async () => {
    const created = await cli(
      'create',
      '--name',
      'far',
      '--scopes',
      'users:read',
      '--expires-in',
      '999999w',
    );
    expect(created.code).toBe(2);
    expect(created.stderr).toContain('--expires-in must end by 9999-12-31');
    expect(await kit.dataSource.query("SELECT id FROM api_tokens WHERE name = 'far'")).toEqual([]);
  });

  it('names every scope the service has in its usage', async () => {
    loadListingScopes();
    const result = await cli('--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`SCOPE is one of: ${registeredScopeNames().join(', ')}.`);
    // Asked of a command too, as the other commands take it.
    for (const asked of [['create', '--help'], ['revoke', '-h'], ['-h']]) {
      const help = await cli(...asked);
      expect({ asked, code: help.code, stderr: help.stderr }).toEqual({
        asked,
        code: 0,
        stderr: '',
      });
      expect(help.stdout).toMatch(/^usage:/);
    }
    // A value, or a word after `--`, is not a request for help: no usage's last line taken for a token.
    for (const name of [
      ['--name', '-h'],
      ['--name', 'a', '--', '-h'],
    ]) {
      const created = await cli('create', ...name, '--scopes', 'users:read');
      expect({ name, code: created.code }).toEqual({ name, code: 2 });
    }
  });

  it('lists tokens without revealing them, and revokes one', async () => {
    const created = await cli('create', '--name', 'short-lived', '--scopes', 'users:read');
    expect(created.code).toBe(0);
    const token = lastLine(created.stdout);
    const [{ id }] = await kit.dataSource.query('SELECT id FROM api_tokens WHERE name = ?', [
      'short-lived',
    ]);
    await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);

    const listed = await cli('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('short-lived');
    expect(listed.stdout).toContain('acme-siem');
    expect(listed.stdout).toContain(token.slice(0, 10));
    expect(listed.stdout).not.toContain(token.slice(10));
    expect(listed.stdout).toMatch(/acme-siem.*active/);

    const revoked = await cli('revoke', String(id));
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`revoked token ${id}`);
    const [row] = await kit.dataSource.query('SELECT revoked_at FROM api_tokens WHERE id = ?', [
      id,
    ]);
    expect(row.revoked_at).not.toBeNull();

    const again = await cli('revoke', String(id));
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('no such active token');
  }, 30_000);

  it.each([
    [
      ['create', '--name', 'x', '--scopes', 'users:read', '--organization', 'abc'],
      '--organization must be a positive integer id',
    ],
    [
      ['create', '--name', 'x', '--scopes', 'users:read', '--organization', '999999'],
      'no such organization',
    ],
    [['create', '--name', 'x', '--scopes', 'users:write'], 'unknown: users:write'],
    [['frobnicate'], 'unknown command'],
    // A space for a comma: the second scope would be dropped without a word.
    [
      ['create', '--name', 'x', '--scopes', 'users:read', 'login_activities:read'],
      'unexpected argument "login_activities:read"',
    ],
    [['list', 'all'], 'unexpected argument "all"'],
  ])(
    'refuses %j with a clear message and a non-zero exit',
    async (args, message) => {
      const before = await kit.dataSource.query('SELECT COUNT(*) AS n FROM api_tokens');
      const result = await cli(...args);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(message);
      expect(result.stdout).not.toMatch(/lsk_[A-Za-z0-9_-]{43}/);
      const after = await kit.dataSource.query('SELECT COUNT(*) AS n FROM api_tokens');
      expect(Number(after[0].n)).toBe(Number(before[0].n));
    },
    30_000,
  );

  it("lists tokens at once while another process holds the migrations' lock, nothing being pending", async () => {
    const config = loadConfig({
      NODE_ENV: 'test',
      DB_MIGRATIONS_RUN: 'false',
      ...kit.database.env,
    });
    const holder = await new DataSource(buildDataSourceOptions(config)).initialize();
    const runner = holder.createQueryRunner();
    const mysql = config.database.kind === 'mysql';
    try {
      // Another instance's turn at the migrations; on SQLite, a writer of the file (the upstream
      // system) in a long transaction.
      await runner.query(
        mysql
          ? "SELECT GET_LOCK(CONCAT('listing-migrations:', SHA1(DATABASE())), 0)"
          : 'BEGIN IMMEDIATE',
      );
      const env = { DATABASE_URL: '', ...kit.database.env, DB_MIGRATIONS_RUN: 'true' };
      // Before, it waited for the lock (30 s on SQLite, the turn on MySQL) and failed there.
      const listed = await runTs('src/cli/token.cli.ts', ['list'], env);
      expect(listed.stderr).toBe('');
      expect(listed.code).toBe(0);
    } finally {
      await runner.query(mysql ? 'SELECT RELEASE_ALL_LOCKS()' : 'ROLLBACK');
      await runner.release();
      await holder.destroy();
    }
  }, 90_000);

  it('says how to apply the migrations a database lacks, not which table it could not find', async () => {
    const bare = await createTestDatabase();
    try {
      const env = { DATABASE_URL: '', ...bare.env, DB_MIGRATIONS_RUN: 'false' };
      const result = await runTs('src/cli/token.cli.ts', ['list'], env);
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(
        "error: the database lacks this build's migrations: run `npm run migration:run` first",
      );
      // Read without writing: not even the migrations' own table (a read-only user could not).
      expect(await tablesOf(bare)).toEqual([]);
    } finally {
      await bare.drop();
    }
  }, 30_000);
});
