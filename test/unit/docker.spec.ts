import Ajv from 'ajv';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { configSchema, DEFAULT_HEAP_MAX_MB } from '../../src/config/app-config';
import { productionNodeFlags } from '../bench/bench-server';

/**
 * No Docker engine runs in CI, so the docker/ folder is checked statically here: the compose
 * file against the compose-spec JSON schema (the copy dclint ships, schemas/compose.schema.json)
 * and both files against what the service needs. docker/verify-build.sh replays the build.
 */
const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}
const compose = parse(read('docker/compose.yaml'), { merge: true }) as {
  services: Record<string, Service>;
};

describe('docker/compose.yaml', () => {
  // The schema names its meta-schema as https://json-schema.org/draft-07/schema, a spelling Ajv
  // does not register; Ajv's default draft is draft-07, so the schema itself is not re-checked.
  const schemaPath = join(
    dirname(require.resolve('dclint/package.json')),
    'schemas',
    'compose.schema.json',
  );
  const validate = new Ajv({ allErrors: true, strict: false, validateSchema: false }).compile(
    JSON.parse(readFileSync(schemaPath, 'utf8')) as object,
  );

  it('is valid against the compose-spec JSON schema', () => {
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('would be refused by that schema if it were wrong', () => {
    const broken = structuredClone(compose) as {
      services: Record<string, Record<string, unknown>>;
    };
    broken.services.api.depends_on = { migrate: { condition: 'when_ready' } };
    broken.services.api.restart_policy = 'always';
    expect(validate(broken)).toBe(false);
    expect(validate.errors?.length).toBeGreaterThanOrEqual(2);
  });

  it('runs MySQL 8.4, Redis, a one-shot migration and the service after it', () => {
    const { mysql, redis, migrate, api } = compose.services;
    expect(mysql.image).toBe('mysql:8.4');
    expect(redis.image).toMatch(/^redis:/);
    expect(migrate.command).toEqual(['node', 'dist/cli/migrate.cli.js']);
    expect(migrate.depends_on).toEqual({ mysql: { condition: 'service_healthy' } });
    expect(api.depends_on).toMatchObject({
      migrate: { condition: 'service_completed_successfully' },
      redis: { condition: 'service_healthy' },
    });
    expect(api.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' });
    expect(migrate.image).toBe(api.image);
    expect(api.environment?.DATABASE_URL).toBe(migrate.environment?.DATABASE_URL);
    expect(api.environment?.DATABASE_URL).toMatch(/@mysql:3306\//);
    expect(api.environment?.REDIS_URL).toBe('redis://redis:6379');
  });

  it('wires the service only through variables the service knows', () => {
    const known = Object.keys(configSchema.shape);
    for (const name of ['migrate', 'api']) {
      const unknown = Object.keys(compose.services[name].environment ?? {}).filter(
        (key) => !known.includes(key),
      );
      expect({ service: name, unknown }).toEqual({ service: name, unknown: [] });
    }
  });
});

describe('docker/Dockerfile', () => {
  const lines = read('docker/Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stages: string[][] = [];
  for (const line of lines) {
    if (line.startsWith('FROM ')) stages.push([]);
    stages.at(-1)?.push(line);
  }
  const [build, runtime] = stages;

  it('builds in one stage and runs from another', () => {
    expect(stages).toHaveLength(2);
    expect(build[0]).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/);
    expect(runtime[0]).toMatch(/^FROM \$\{NODE_IMAGE\} AS runtime$/);
    expect(lines).toContain('ARG NODE_IMAGE=node:24.21.0-bookworm-slim');
  });

  it('copies everything the build reads (the swc settings included)', () => {
    expect(build.filter((line) => line.startsWith('COPY'))).toEqual([
      'COPY package.json package-lock.json ./',
      'COPY tsconfig.json tsconfig.build.json nest-cli.json .swcrc ./',
      'COPY src ./src',
      'COPY bin ./bin',
    ]);
  });

  it('installs exactly the lock file, compiles, and keeps production dependencies only', () => {
    const runs = build.filter((line) => line.startsWith('RUN npm'));
    expect(runs).toEqual([
      'RUN npm ci --no-audit --no-fund',
      'RUN npm run build',
      'RUN npm prune --omit=dev --no-audit --no-fund',
    ]);
    expect(runtime.filter((line) => line.startsWith('COPY'))).toEqual([
      'COPY --from=build /app/package.json ./package.json',
      'COPY --from=build /app/node_modules ./node_modules',
      'COPY --from=build /app/dist ./dist',
      'COPY --from=build /app/bin ./bin',
    ]);
  });

  it('runs as a non-root user, with a health check on /health/live', () => {
    const user = runtime.find((line) => line.startsWith('USER '));
    expect(user).toBe('USER node');
    expect(runtime.indexOf(user!)).toBeLessThan(
      runtime.findIndex((line) => line.startsWith('CMD')),
    );
    expect(runtime.find((line) => line.startsWith('HEALTHCHECK'))).toContain('/health/live');
    expect(runtime.at(-1)).toMatch(/^CMD \["bin\/start-prod", .*"dist\/main\.js"\]$/);
  });

  it('starts the app with the same node flags as `npm run start:prod` (and the bench)', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> })
      .scripts;
    // `exec`: the shell npm runs the script in becomes the app, which gets npm's signals.
    const [exec, ...argv] = scripts['start:prod'].split(/\s+/);
    expect(exec).toBe('exec');
    expect(argv).toEqual([
      'bin/start-prod',
      '--v8-pool-size=1',
      '--max-semi-space-size=16',
      '--no-maglev',
      'dist/main.js',
    ]);
    expect(runtime.at(-1)).toBe(`CMD [${argv.map((arg) => `"${arg}"`).join(', ')}]`);
    // The bench and the drill read their servers' flags from the same line.
    expect(productionNodeFlags(256)).toEqual(['--max-old-space-size=256', ...argv.slice(1, -1)]);
  });

  it("bounds the heap by NODE_HEAP_MAX_MB, with the config's default", () => {
    const launcher = read('bin/start-prod');
    const fallback = /NODE_HEAP_MAX_MB=(\d+)\n/.exec(launcher)?.[1];
    expect(Number(fallback)).toBe(DEFAULT_HEAP_MAX_MB);
    expect(launcher).toContain('exec node --max-old-space-size="$NODE_HEAP_MAX_MB" "$@"');
  });

  it('applies NODE_HEAP_MAX_MB to the node it execs, and leaves a bad value to the config check', () => {
    const flagsWith = (value: string) =>
      spawnSync('sh', [join(ROOT, 'bin/start-prod'), '-p', 'process.execArgv.join(" ")'], {
        env: { PATH: process.env.PATH, NODE_HEAP_MAX_MB: value },
        encoding: 'utf8',
      }).stdout.trim();
    expect(flagsWith('100')).toBe('--max-old-space-size=100 -p process.execArgv.join(" ")');
    expect(flagsWith('lots')).toBe('-p process.execArgv.join(" ")');
    // Out of the config's range (64-65536): V8 would die of it before the app could name it.
    for (const value of ['32', '63', '65537', '99999999999999999999'])
      expect({ value, flags: flagsWith(value) }).toEqual({
        value,
        flags: '-p process.execArgv.join(" ")',
      });
    expect(flagsWith('64')).toBe('--max-old-space-size=64 -p process.execArgv.join(" ")');
    expect(flagsWith('65536')).toBe('--max-old-space-size=65536 -p process.execArgv.join(" ")');
  });
});
