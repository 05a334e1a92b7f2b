import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadListingScopes } from '../../src/cli/cli-support';
import { registeredScopeNames } from '../../src/common/auth/scope-registry';
import { runTs, startServerProcess, stopServerProcess } from '../kit/processes';

/**
 * The README's quick start, as a newcomer runs it: start with no DATABASE_URL, create a token
 * with the CLI, call the API. The CLI and the server share the embedded SQLite file.
 */
describe('quick start on the embedded default', () => {
  const dir = mkdtempSync(join(tmpdir(), 'listing-quick-start-'));
  const env = { SQLITE_PATH: join(dir, 'listing.sqlite'), DATABASE_URL: '' };
  let server: Awaited<ReturnType<typeof startServerProcess>>;

  beforeAll(async () => {
    server = await startServerProcess(env);
  });
  afterAll(async () => {
    if (server) await stopServerProcess(server.process);
    rmSync(dir, { recursive: true, force: true });
  });

  it('migrates, seeds demo data, and says how to create a token', () => {
    expect(server.output()).toContain('seeded demo data');
    loadListingScopes();
    const scopes = registeredScopeNames().join(',');
    expect(server.output()).toContain(`npm run token -- create --name me --scopes ${scopes}`);
  });

  it('serves the demo data to a token made by the CLI', async () => {
    const created = await runTs(
      'src/cli/token.cli.ts',
      ['create', '--name', 'newcomer', '--scopes', 'users:read,login_activities:read'],
      env,
    );
    expect(created.code).toBe(0);
    const token = created.stdout.trim().split('\n').pop()!;
    expect(token).toMatch(/^lsk_[A-Za-z0-9_-]{43}$/);

    const users = await fetch(`${server.baseUrl}/v1/users?limit=2`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(users.status).toBe(200);
    expect(users.headers.get('x-total-count')).toBe('1000');
    const body = (await users.json()) as { data: unknown[]; pagination: unknown };
    expect(body.data).toHaveLength(2);
    expect(body.pagination).toEqual({ current_page: 1, limit: 2, page_count: 500 });

    const activities = await fetch(`${server.baseUrl}/v1/login_activities`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(activities.status).toBe(200);
    expect(activities.headers.get('x-total-count')).toBe('5000');
  });

  it("answers the README's filter examples with rows of the demo data", async () => {
    const created = await runTs(
      'src/cli/token.cli.ts',
      ['create', '--name', 'examples', '--scopes', 'users:read,login_activities:read'],
      env,
    );
    const token = created.stdout.trim().split('\n').pop()!;
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
    const filters = readme.split(/^### Filters$/m)[1].split(/^### /m)[0];
    const examples = [...filters.matchAll(/^GET (\/v1\/\S+)$/gm)].map((match) => match[1]);
    expect(examples.length).toBeGreaterThanOrEqual(2);
    for (const example of examples) {
      const response = await fetch(`${server.baseUrl}${example}`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      const body = (await response.json()) as { data?: unknown[] };
      expect({ example, status: response.status, rows: (body.data?.length ?? 0) > 0 }).toEqual({
        example,
        status: 200,
        rows: true,
      });
    }
  });

  it('keeps the data on restart instead of seeding again', async () => {
    await stopServerProcess(server.process);
    server = await startServerProcess(env);
    expect(server.output()).not.toContain('seeded demo data');
  });
});

describe('two instances started together on a new embedded file', () => {
  it('both serve, and the demo data is seeded once', async () => {
    // Each round a new file: the second instance's seed read before it wrote, and could not write
    // once the first had ("database is locked" at boot, exit 1), in about 3 starts of 8.
    for (let round = 0; round < 4; round++) {
      const dir = mkdtempSync(join(tmpdir(), 'listing-two-starts-'));
      const env = { SQLITE_PATH: join(dir, 'listing.sqlite'), DATABASE_URL: '' };
      const started = await Promise.allSettled([startServerProcess(env), startServerProcess(env)]);
      try {
        expect(started.map(({ status }) => status)).toEqual(['fulfilled', 'fulfilled']);
        const outputs = started.map((s) => (s.status === 'fulfilled' ? s.value.output() : ''));
        expect(outputs.filter((output) => output.includes('seeded demo data'))).toHaveLength(1);
      } finally {
        for (const s of started)
          if (s.status === 'fulfilled') await stopServerProcess(s.value.process);
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }, 120_000);
});
