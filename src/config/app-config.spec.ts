import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, configSchema, loadConfig } from './app-config';

const ROOT = join(__dirname, '..', '..');
const schemaKeys = Object.keys(configSchema.shape);

/** What loadConfig would make of each variable when it is not set, as text ('' = no default). */
const defaults: Record<string, string> = Object.fromEntries(
  Object.entries(configSchema.parse({})).map(([key, value]) => [key, String(value)]),
);

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      env: 'development',
      port: 3000,
      database: {
        kind: 'sqlite',
        replicaUrls: [],
        replicaMaxLagMs: 5000,
        migrationsRun: true,
        seedDemoData: true,
      },
      log: { level: 'info', pretty: true },
      metrics: { enabled: true, token: undefined },
      shutdownTimeoutMs: 10_000,
      heapMaxMb: 128,
    });
    expect(loadConfig({ NODE_ENV: 'production' }).log.pretty).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', LOG_PRETTY: 'true' }).log.pretty).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT="abc": must be an integer between 0 and 65535'],
    [{ PORT: '70000' }, 'PORT="70000"'],
    [{ NODE_HEAP_MAX_MB: '32' }, 'NODE_HEAP_MAX_MB="32": must be an integer between 64 and 65536'],
    [{ NODE_ENV: 'staging' }, 'NODE_ENV="staging"'],
    [{ DB_POOL_SIZE: '0' }, 'DB_POOL_SIZE="0"'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL="loud"'],
    [{ LOG_PRETTY: 'yes' }, 'LOG_PRETTY="yes": must be true or false'],
    [{ METRICS_ENABLED: 'maybe' }, 'METRICS_ENABLED="maybe": must be true or false'],
    [{ SHUTDOWN_TIMEOUT_MS: '-1' }, 'SHUTDOWN_TIMEOUT_MS="-1"'],
    [{ PAGE_LIMIT_DEFAULT: '200' }, 'PAGE_LIMIT_DEFAULT=200: must not exceed PAGE_LIMIT_MAX (100)'],
    [{ DATABASE_REPLICA_URLS: 'mysql://r1/db' }, 'DATABASE_REPLICA_URLS: needs DATABASE_URL'],
    [{ TRUST_PROXY: 'yes' }, 'TRUST_PROXY="yes": must be false, true (one proxy), a number'],
    [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY="10.0.0.0/33"'],
    [{ CORS_ORIGINS: '*' }, 'CORS_ORIGINS="*": must be a comma-separated list of origins'],
    [{ CORS_ORIGINS: 'https://a.example, https://b.example/' }, 'CORS_ORIGINS="https://a.'],
    [{ CORS_ORIGINS: 'not a url, ftp://x' }, 'CORS_ORIGINS="not a url, ftp://x"'],
    [
      { REPLICA_MAX_LAG_MS: '500' },
      'REPLICA_MAX_LAG_MS="500": must be an integer between 1000 and 3600000',
    ],
  ])('names the variable of a bad value: %j', (env, message) => {
    expect(problemsOf(env).join('\n')).toContain(message);
  });

  it.each([
    ['false', false],
    ['true', 1],
    ['2', 2],
    ['loopback, 10.0.0.0/8, fd00::/8', ['loopback', '10.0.0.0/8', 'fd00::/8']],
  ])('reads TRUST_PROXY=%s as hops or proxy addresses, never every hop', (value, expected) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it('signs cursors by default with the database address, never its credentials', () => {
    const withPassword = loadConfig({ DATABASE_URL: 'mysql://app:hunter2@db:3306/listing' });
    const otherPassword = loadConfig({ DATABASE_URL: 'mysql://app:letmein@db:3306/listing' });
    expect(withPassword.cursorSecret).not.toContain('hunter2');
    expect(withPassword.cursorSecret).not.toContain('app@');
    expect(withPassword.cursorSecret).toBe(otherPassword.cursorSecret);
    expect(loadConfig({ CURSOR_SECRET: 's'.repeat(16) }).cursorSecret).toBe('s'.repeat(16));
  });

  it('names a value past the largest safe integer once, in its own words', () => {
    expect(problemsOf({ COUNT_CACHE_TTL_MS: '99999999999999999' })).toEqual([
      'COUNT_CACHE_TTL_MS="99999999999999999": must be an integer between 0 and 3600000',
    ]);
  });

  it('names a bad secret-bearing variable without echoing its value', () => {
    const problems = problemsOf({
      DATABASE_URL: 'postgres://app:hunter2@db/listing',
      REDIS_URL: 'http://:hunter2@cache',
      METRICS_TOKEN: 'hunter2',
    });
    expect(problems).toEqual([
      'DATABASE_URL: must be a mysql:// URL with a host and a database, and no query but ssl=true or ssl=false, e.g. mysql://user:pass@db:3306/listing',
      'REDIS_URL: must be a redis:// URL with a host, e.g. redis://cache:6379',
      'METRICS_TOKEN: must be at least 16 characters',
    ]);
    const replicas = problemsOf({
      DATABASE_URL: 'mysql://app@db/listing',
      DATABASE_REPLICA_URLS: 'mysql://app@r1/listing,pg://app:hunter2@r2/listing',
    });
    expect(replicas).toEqual([
      'DATABASE_REPLICA_URLS: entry 2 must be a mysql:// URL with a host and a database, and no query but ssl=true or ssl=false, e.g. mysql://user:pass@db:3306/listing',
    ]);
  });

  it.each([
    ['a port out of range', { DATABASE_URL: 'mysql://app:hunter2@db:99999/listing' }],
    ['a port that is not a number', { DATABASE_URL: 'mysql://app:hunter2@db:abc/listing' }],
    ['no database', { DATABASE_URL: 'mysql://app:hunter2@db:3306/' }],
    ['no database nor path', { DATABASE_URL: 'mysql://hunter2' }],
    ['a Redis port out of range', { REDIS_URL: 'redis://:hunter2@cache:99999' }],
    ['a Redis database that is not a number', { REDIS_URL: 'redis://:hunter2@cache:6379/x' }],
    ['a Redis database past 2^31 - 1', { REDIS_URL: 'redis://:hunter2@cache:6379/2147483648' }],
    ['a stray % in the password', { DATABASE_URL: 'mysql://app:hunter2%zz@db/listing' }],
    ['an IPv6 literal host', { DATABASE_URL: 'mysql://app:hunter2@[::1]:3306/listing' }],
    // Query parameters the drivers would drop or read their own way (a TLS wish ignored).
    ['a query other than ssl', { DATABASE_URL: 'mysql://app:hunter2@db/listing?connectTimeout=1' }],
    ['an ssl value other than true or false', { DATABASE_URL: 'mysql://app:hunter2@db/l?ssl=1' }],
    [
      'a replica query other than ssl',
      {
        DATABASE_URL: 'mysql://app@db/listing',
        DATABASE_REPLICA_URLS: 'mysql://app:hunter2@r1/listing?sslmode=require',
      },
    ],
    [
      'a replica port out of range',
      {
        DATABASE_URL: 'mysql://app@db/listing',
        DATABASE_REPLICA_URLS: 'mysql://app:hunter2@r1:99999/listing',
      },
    ],
  ])('refuses a URL the drivers could not open (%s), naming it only', (_label, env) => {
    const problems = problemsOf(env);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^(DATABASE_URL|REDIS_URL|DATABASE_REPLICA_URLS): .*must be a /);
    expect(problems[0]).not.toContain('hunter2');
  });

  it('reports every bad variable at once, in a message that lists them', () => {
    const error = (() => {
      try {
        loadConfig({ PORT: 'x', LOG_LEVEL: 'y' });
      } catch (caught) {
        return caught as Error;
      }
    })();
    expect(error?.message).toBe(
      'Invalid configuration:\n' +
        '  - PORT="x": must be an integer between 0 and 65535\n' +
        '  - LOG_LEVEL="y": Invalid option: expected one of "fatal"|"error"|"warn"|"info"|"debug"|"trace"|"silent"',
    );
  });
});

describe('the documented configuration matches the schema', () => {
  it('.env.example lists every variable with its default', () => {
    const lines = readFileSync(join(ROOT, '.env.example'), 'utf8')
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line));
    const entries = lines.map((line) => {
      const [key, ...value] = line.split('=');
      return [key, value.join('=')];
    });
    expect(entries.map(([key]) => key).sort()).toEqual([...schemaKeys].sort());
    for (const [key, value] of entries)
      expect({ key, value }).toEqual({ key, value: defaults[key] ?? '' });
  });

  it('.env.example, loaded into a shell as the README says, is a valid configuration', () => {
    const env = execFileSync('sh', ['-c', 'set -a; . ./.env.example; set +a; env -0'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH },
    });
    const loaded = Object.fromEntries(
      env
        .toString('utf8')
        .split('\0')
        .filter((entry) => entry.includes('='))
        .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
    );
    expect(loaded.PORT).toBe('3000');
    expect(loadConfig(loaded)).toMatchObject({ port: 3000 });
  });

  it("README's configuration table lists every variable with its default", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.split(/^## Configuration$/m)[1].split(/^## /m)[0];
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \| ([^|]*) \|/gm)].map((match) => ({
      key: match[1],
      documented: match[2].trim(),
    }));
    expect(rows.map((row) => row.key).sort()).toEqual([...schemaKeys].sort());
    for (const { key, documented } of rows) {
      // A fixed default is shown as `value`; no default is "(unset)" or a sentence saying what
      // is derived (e.g. "true on SQLite, false on MySQL").
      const expected =
        defaults[key] === undefined ? expect.not.stringMatching(/^`/) : `\`${defaults[key]}\``;
      expect({ key, documented }).toEqual({ key, documented: expected });
    }
  });
});
