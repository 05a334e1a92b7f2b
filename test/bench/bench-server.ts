import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { configSchema, DEFAULT_HEAP_MAX_MB } from '../../src/config/app-config';

const ROOT = resolve(__dirname, '..', '..');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Runs `npm run build` when dist/main.js is missing or older than any file under src/. */
export function buildIfStale(): void {
  let built = 0;
  try {
    built = statSync(join(ROOT, 'dist', 'main.js')).mtimeMs;
  } catch {
    built = 0;
  }
  if (built > newestMtime(join(ROOT, 'src'))) return;
  console.log('[bench] dist is stale: npm run build');
  const result = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm run build failed');
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export interface RunningServer {
  baseUrl: string;
  pid: number;
  /** performance.now() when the process was spawned (V8 CPU profiles count from about then). */
  spawnedAt: number;
  /** VmHWM: the most memory the process has held resident so far, in MiB. */
  peakRssMiB: () => number;
  /** CPU time (user + system) the process has used so far, in seconds. */
  cpuSeconds: () => number;
  stop: () => Promise<void>;
}

/**
 * The yardsticks of issue 5: the same minimal listing (reference-listing.ts) in node:http, in the
 * barest NestJS app on Express, and in NestJS with the stock guard, pipe and interceptor.
 */
export const YARDSTICKS = {
  ref: 'test/bench/reference-server.ts',
  nest: 'test/bench/reference-nest-server.ts',
  design: 'test/bench/reference-design-server.ts',
} as const;
export type Yardstick = keyof typeof YARDSTICKS;

/**
 * The node flags production starts the app with: those of `npm run start:prod` (the Docker image's
 * CMD is held to the same by test/unit/docker.spec.ts), and the heap bound bin/start-prod adds for
 * `heapMaxMb` (NODE_HEAP_MAX_MB). Every server of the bench gets them, the yardsticks too, so that
 * the ratios compare like with like.
 */
export function productionNodeFlags(heapMaxMb: number): string[] {
  const scripts = (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts;
  // `exec` makes npm's child the app itself (see test/unit/start-prod.spec.ts).
  const argv = scripts['start:prod']
    .trim()
    .replace(/^exec\s+/, '')
    .split(/\s+/);
  if (argv[0] !== 'bin/start-prod' || argv.at(-1) !== 'dist/main.js') {
    throw new Error(
      `start:prod is not "[exec] bin/start-prod [flags] dist/main.js": ${scripts['start:prod']}`,
    );
  }
  return [`--max-old-space-size=${heapMaxMb}`, ...argv.slice(1, -1)];
}

/** NODE_HEAP_MAX_MB of the bench's environment, validated as the app does, or its default. */
export function benchHeapMaxMb(): number {
  const value = configSchema.shape.NODE_HEAP_MAX_MB.parse(
    process.env.NODE_HEAP_MAX_MB || undefined,
  );
  return value ?? DEFAULT_HEAP_MAX_MB;
}

const CLOCK_TICKS_PER_SECOND =
  Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/**
 * Starts the built app as its own process, on a free port, against `databaseUrl`; with
 * `yardstick`, that yardstick server instead.
 */
export async function startServer(
  databaseUrl: string,
  options: { extraEnv?: Record<string, string>; nodeArgs?: string[]; yardstick?: Yardstick } = {},
): Promise<RunningServer> {
  const { extraEnv = {}, nodeArgs = [], yardstick } = options;
  const reference = yardstick !== undefined;
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    DB_MIGRATIONS_RUN: 'false',
    SEED_DEMO_DATA: 'false',
    RATE_LIMIT_PER_MINUTE: '0',
    // S4 sends a rejected token on purpose, as fast as it can.
    RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '1000000',
    LOG_LEVEL: 'warn',
    LOG_PRETTY: 'false',
    NODE_HEAP_MAX_MB: String(benchHeapMaxMb()),
    // Settings for one run, e.g. BENCH_SERVER_ENV="DEEP_PAGE_ROWS=50 COUNT_CACHE_TTL_MS=300".
    ...Object.fromEntries(
      (process.env.BENCH_SERVER_ENV ?? '')
        .split(/\s+/)
        .filter(Boolean)
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    ),
    ...extraEnv,
  };
  const args = [
    ...productionNodeFlags(Number(env.NODE_HEAP_MAX_MB)),
    // Node/V8 flags for the server alone (e.g. heap sizes); the load generator keeps its own.
    ...(process.env.BENCH_SERVER_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? []),
    ...nodeArgs,
    ...(reference ? ['-r', '@swc-node/register', YARDSTICKS[yardstick]] : ['dist/main.js']),
  ];
  const spawnedAt = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${baseUrl}${reference ? '/v1/users' : '/health/ready'}`);
      if (response.ok || (reference && response.status === 401)) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('server did not become ready within 60 s');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!reference) await warmedUp(baseUrl, child);
  const pid = child.pid!;
  return {
    baseUrl,
    pid,
    spawnedAt,
    peakRssMiB: () => {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const match = /VmHWM:\s+(\d+) kB/.exec(status);
      return match ? Number(match[1]) / 1024 : NaN;
    },
    cpuSeconds: () => {
      // Fields 14 and 15 of /proc/PID/stat (utime, stime), counted after the ")" of the name.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    },
    stop: async () => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Waits for the count cache's warm-up after the start (`listing_warmup_pending` at 0), which the
 * service runs in the background: figures taken while it scans are the warm-up's.
 */
async function warmedUp(baseUrl: string, child: ChildProcess): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    const pending = /^listing_warmup_pending (\d+)/m.exec(metrics);
    if (!pending || pending[1] === '0') break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const seconds = (Date.now() - started) / 1000;
  if (seconds >= 1)
    console.log(`[bench] waited ${seconds.toFixed(0)} s for the count cache's warm-up`);
}
