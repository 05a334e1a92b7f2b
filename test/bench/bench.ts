/**
 * `npm run bench -- [--size tiny|small|large|xl|both] [--duration S] [--connections N]`
 *
 * Seeds (or reuses) a bench database per size on the MariaDB/MySQL server of DATABASE_URL
 * (default mysql://root@127.0.0.1:3306), starts the built app against it as a child process and
 * loads it with autocannon, one scenario at a time. Not part of the jest suites.
 *
 * `--only S1,S2` runs only those scenarios. `--profile` (with one scenario) also records a V8 CPU
 * profile of the server during the load and prints where its CPU time went, per package.
 * `--reference` also runs S1-S4 against the hand-written node:http + mysql2 server of
 * reference-server.ts on the same data, and prints the app's figures as ratios to it; and against
 * the same listing in the barest NestJS app (reference-nest-server.ts), the framework's floor; and
 * against it with the guide's stock per-request pieces (reference-design-server.ts: passport guard,
 * ValidationPipe, envelope interceptor), the design's floor.
 * Every row reports the server's CPU time per request, read from /proc: steadier than req/s on a
 * machine whose speed drifts.
 * `--walks` also runs the consumers' whole jobs (walks.ts: W1, W2, X1, X2, K) against `mariadb --quick`.
 * `--matrix` also runs M, the filter × sort × depth matrix (matrix.ts), one request at a time, under
 * an unscoped and an organization-scoped token; `--mixed` also runs X, a 60 s mixed load while
 * totals are recounted in the background (mixed.ts); `--insert-cost --without-indexes ix_a,ix_b`
 * also measures I, the writer's insert cost with and without those indexes of login_activities
 * (insert-cost.ts; the indexes are added back). `--memory` also runs H, 60 s of mixed load with
 * exports and rejected tokens against a server under `--max-old-space-size=128` (memory.ts): no
 * crash, no 5xx, its peak RSS. `--probe` also runs P, random requests beyond the matrix, each page
 * compared with the database (probe.ts). `--only M` (or X, H, I, P) runs that part alone.
 * Every run's results are written to .bench/ (git-ignored) as JSON.
 */
import 'reflect-metadata';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import { ApiTokensRepository } from '../../src/auth/api-tokens.repository';
import { TokenIssuer } from '../../src/auth/token-issuer';
import { registeredScopeNames } from '../../src/common/auth/scope-registry';
import { loadListingScopes } from '../../src/cli/cli-support';
import { BenchSize, ensureBenchDatabase, openBenchDataSource, SIZES } from './bench-database';
import { buildIfStale, RunningServer, startServer, YARDSTICKS, Yardstick } from './bench-server';
import { type StageShare, summarizeProfiles } from './cpu-profile';
import { readHostCpuTimes, stealPercent } from './host-cpu';
import { checkTargets, isAppRow, OtherPeak, scenarioOf, yardstickRowName } from './targets';
import { benchInsertCost, InsertCostResult } from './insert-cost';
import { benchMatrix, MatrixRow, MatrixSummary, pickOrganization, summaryLine } from './matrix';
import { benchProbe, ProbeResult, probeSummary } from './probe';
import { benchMemory, MemoryResult } from './memory';
import { benchMixed, MixedResult } from './mixed';
import { benchWalks, WalkRow } from './walks';

interface Scenario {
  name: string;
  path: string;
  token: 'good' | 'bad' | 'none';
  expectedStatus: number;
  /** Also time this many requests one after the other and report their median. */
  sequential?: number;
  /** The sequential requests walk on: each asks for the ids after the last one it got. */
  walk?: boolean;
}

interface Row {
  scenario: string;
  path: string;
  reqPerSec: number;
  p50: number;
  p99: number;
  /** The slowest reply: shows a stall that a percentile hides (e.g. every request waiting for a count). */
  max: number;
  errors: number;
  sequentialMedianMs?: number;
  peakRssMiB: number;
  /** The server's CPU time (user + system) during the measured load, per request served. */
  cpuMicrosPerRequest: number;
  /**
   * The load generator's own CPU time per request (autocannon runs in this process): the share of
   * the machine's cores it takes from the server and the database it measures.
   */
  loadCpuMicrosPerRequest: number;
  /**
   * The share of the machine's CPU time the VM's host took during the measured load (Linux's
   * steal time): figures taken while it is high are the host's, not the server's.
   */
  stealPercent?: number;
}

const BAD_TOKEN = `lsk_${'A'.repeat(43)}`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: 'string', default: 'both' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '32' },
      warmup: { type: 'string', default: '3' },
      only: { type: 'string' },
      profile: { type: 'boolean', default: false },
      reference: { type: 'boolean', default: false },
      walks: { type: 'boolean', default: false },
      matrix: { type: 'boolean', default: false },
      probe: { type: 'boolean', default: false },
      mixed: { type: 'boolean', default: false },
      'mixed-duration': { type: 'string', default: '60' },
      memory: { type: 'boolean', default: false },
      'memory-heap-mb': { type: 'string', default: '128' },
      'insert-cost': { type: 'boolean', default: false },
      'without-indexes': { type: 'string' },
    },
    strict: true,
  });
  // `both` is small and large; a list (`small,xl`) runs each, in order.
  const names = values.size === 'both' ? ['small', 'large'] : values.size!.split(',');
  for (const name of names) {
    if (!SIZES[name]) throw new Error(`--size must be tiny, small, large, xl or both, not ${name}`);
  }
  const only = values.only ? new Set(values.only.split(',')) : undefined;
  const withoutIndexes = values['without-indexes']?.split(',').filter(Boolean) ?? [];
  if (values['insert-cost'] && !withoutIndexes.length) {
    throw new Error('--insert-cost needs --without-indexes ix_a,ix_b (indexes of one table)');
  }
  if (values.profile && only?.size !== 1) {
    throw new Error('--profile needs exactly one scenario: --only S1, say');
  }
  const options: BenchOptions = {
    duration: Number(values.duration),
    connections: Number(values.connections),
    warmup: Number(values.warmup),
    only,
    profile: values.profile,
    reference: values.reference,
    walks: values.walks,
    matrix: values.matrix,
    probe: values.probe,
    mixed: values.mixed,
    mixedDuration: Number(values['mixed-duration']),
    memory: values.memory,
    memoryHeapMb: Number(values['memory-heap-mb']),
    insertCost: values['insert-cost'] ? withoutIndexes : undefined,
  };

  if (Number(process.versions.node.split('.')[0]) < 24) {
    // Every server runs on this process's Node; the image's is 24 (docker/Dockerfile).
    console.log(
      `[bench] node ${process.version}: the Docker image runs Node 24; for its figures run ` +
        '`PATH="$(.ci/node24):$PATH" npm run bench -- …`',
    );
  }
  buildIfStale();
  loadListingScopes();
  const results = new Map<string, SizeResult & { load: string }>();
  for (const name of names) {
    const before = loadAverage();
    const result = await benchSize(SIZES[name], options);
    const load = `load average ${before} before, ${loadAverage()} after`;
    results.set(name, { ...result, load });
  }
  mkdirSync('.bench', { recursive: true });
  const file = `.bench/bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  writeFileSync(
    file,
    JSON.stringify({ options: values, results: Object.fromEntries(results) }, null, 2),
  );
  console.log(`[bench] results written to ${file}`);
  await printMachine();
  for (const [name, { rows, load, matrix, probe, mixed, memory, insertCost }] of results) {
    if (rows.length) printTable(SIZES[name], rows, options, load);
    if (matrix) console.log(`\n${name} M summary: ${summaryLine(matrix.summary)}`);
    if (probe) {
      console.log(`${name} P: ${probeSummary(probe)}`);
      for (const line of [...probe.problems, ...probe.slow.map((s) => `${s.ms} ms ${s.path}`)]) {
        console.log(`  ${line}`);
      }
      if (probe.problems.length) process.exitCode = 1;
    }
    if (mixed) {
      console.log(
        `${name} X: ${mixed.requests} requests, ${Object.entries(mixed.statuses)
          .map(([status, n]) => `${n} × ${status}`)
          .join(', ')}, p50 ${mixed.p50} ms, p99 ${mixed.p99} ms, max ${mixed.max} ms`,
      );
    }
    if (memory) {
      console.log(
        `${name} H: --max-old-space-size=${memory.heapMaxMb}, ${memory.requests} requests, ` +
          `${memory.serverErrors} × 5xx, ${memory.unexpected} unexpected, errors ${memory.errors}, ` +
          `peak RSS ${memory.peakRssMiB.toFixed(0)} MiB, ${memory.survived ? 'still up' : 'NOT UP'}: ` +
          (memory.passed ? 'passed' : 'FAILED'),
      );
      if (!memory.passed) process.exitCode = 1;
    }
    if (insertCost) {
      console.log(
        `${name} I: ${insertCost.withAll.microsPerRow.toFixed(1)} and ${insertCost.withAllAgain.microsPerRow.toFixed(1)} µs/row with all indexes, ` +
          `${insertCost.withoutNamed.microsPerRow.toFixed(1)} µs/row without ${insertCost.withoutIndexes.join(', ')}: ` +
          `${insertCost.ratio.toFixed(2)}×; those took ${(insertCost.namedIndexBytes / 2 ** 20).toFixed(0)} MiB, ` +
          `added back in ${insertCost.rebuildSeconds.toFixed(1)} s; table compacted again in ${insertCost.compactSeconds.toFixed(1)} s`,
      );
    }
  }
  const small = results.get('small')?.rows.find((row) => row.scenario === 'S2');
  const large = results.get('large')?.rows.find((row) => row.scenario === 'S2');
  const scaling = small && large ? large.p50 / small.p50 : undefined;
  if (small && large) {
    console.log(
      `scaling: S2 p50 large / small = ${large.p50} ms / ${small.p50} ms = ${scaling!.toFixed(2)}`,
    );
  }
  // Issue 26's scaling lines: S2 and S5 p50 at xl over small (goal ≤ 1.5).
  for (const scenario of ['S2', 'S5']) {
    const at = (size: string) =>
      results.get(size)?.rows.find((row) => row.scenario === scenario)?.p50;
    const [smallP50, xlP50] = [at('small'), at('xl')];
    if (smallP50 && xlP50) {
      console.log(
        `scaling: ${scenario} p50 xl / small = ${xlP50} ms / ${smallP50} ms = ${(xlP50 / smallP50).toFixed(2)}`,
      );
    }
  }
  const largeSet = results.get('large');
  if (largeSet) {
    const otherPeaks = [
      { name: 'X1', peakRssMiB: largeSet.walks.find((walk) => walk.name === 'X1')?.peakRssMiB },
      { name: 'M', peakRssMiB: largeSet.matrix?.summary.peakRssMiB },
    ].filter((peak): peak is OtherPeak => peak.peakRssMiB !== undefined);
    printTargets(largeSet.rows, scaling, otherPeaks);
  }
}

function printTargets(rows: Row[], scaling: number | undefined, otherPeaks: OtherPeak[]): void {
  const checks = checkTargets(rows, scaling, otherPeaks);
  if (!checks.length) return;
  console.log('\ntargets (issues 5 and 33, large set):');
  for (const check of checks) {
    console.log(`  ${check.met ? 'met    ' : 'NOT met'}  ${check.target}: ${check.measured}`);
  }
}

interface SizeResult {
  rows: Row[];
  walks: WalkRow[];
  matrix?: { rows: MatrixRow[]; summary: MatrixSummary };
  probe?: ProbeResult;
  mixed?: MixedResult;
  memory?: MemoryResult;
  insertCost?: InsertCostResult;
}

interface BenchOptions {
  duration: number;
  connections: number;
  warmup: number;
  only?: Set<string>;
  profile: boolean;
  reference: boolean;
  walks: boolean;
  matrix: boolean;
  probe: boolean;
  mixed: boolean;
  mixedDuration: number;
  memory: boolean;
  memoryHeapMb: number;
  /** The indexes `--insert-cost` drops, when given. */
  insertCost?: string[];
}

async function benchSize(size: BenchSize, options: BenchOptions): Promise<SizeResult> {
  const url = await ensureBenchDatabase(size);
  const result = await benchServer(size, url, options);
  // With the servers stopped: it changes the table's indexes for a while.
  if (options.insertCost && (!options.only || options.only.has('I'))) {
    result.insertCost = await benchInsertCost(url, options.insertCost);
  }
  return result;
}

/** The scenarios, walks, matrix and mixed load: everything that runs against a server. */
async function benchServer(
  size: BenchSize,
  url: string,
  options: BenchOptions,
): Promise<SizeResult> {
  const dataSource = await openBenchDataSource(url);
  let token: string;
  let scoped: { token: string; organizationId: number };
  let maxActivityId: number;
  try {
    const issuer = new TokenIssuer(new ApiTokensRepository(dataSource));
    const scopes = registeredScopeNames();
    token = (await issuer.issue({ name: 'bench', scopes })).token;
    const organizationId = await pickOrganization(url);
    scoped = {
      token: (await issuer.issue({ name: 'bench scoped', scopes, organizationId })).token,
      organizationId,
    };
    const [row] = await dataSource.query('SELECT MAX(id) AS max_id FROM login_activities');
    maxActivityId = Number(row.max_id);
  } finally {
    await dataSource.destroy();
  }

  const profileDir = options.profile ? mkdtempSync(join(tmpdir(), 'bench-profile-')) : undefined;
  const server = await startServer(url, {
    nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  });
  let profiled: { requests: number; startedAt: number; endedAt: number } | undefined;
  const yardsticks = new Map<Yardstick, RunningServer>();
  try {
    const first = await getJson(server, '/v1/login_activities?page=1&limit=20', token);
    const pageCount = Number(first.pagination.page_count);
    const deepPage = Math.max(1, Math.floor(pageCount * 0.8));
    const thirtyDaysAgo = new Date(Date.now() - 30 * 86_400_000).toISOString();
    const scenarios: Scenario[] = [
      // The app's floor: the same process, middleware and Nest pipeline, without token,
      // validation or database. No listing of this app can be faster.
      { name: 'S0', path: '/health/live', token: 'none', expectedStatus: 200 },
      { name: 'S1', path: '/v1/users?page=1&limit=20', token: 'good', expectedStatus: 200 },
      {
        name: 'S2',
        path: '/v1/login_activities?page=1&limit=100',
        token: 'good',
        expectedStatus: 200,
      },
      {
        name: 'S3',
        path: `/v1/login_activities?page=${deepPage}&limit=20`,
        token: 'good',
        expectedStatus: 200,
        sequential: 20,
      },
      { name: 'S4', path: '/v1/users?page=1&limit=20', token: 'bad', expectedStatus: 401 },
      {
        name: 'S5',
        path: `/v1/login_activities?success=false&created_from=${encodeURIComponent(thirtyDaysAgo)}&sort=-created_at`,
        token: 'good',
        expectedStatus: 200,
      },
      {
        name: 'K',
        path: `/v1/login_activities?after_id=${Math.floor(maxActivityId * 0.9)}&limit=20`,
        token: 'good',
        expectedStatus: 200,
        sequential: 20,
        walk: true,
      },
    ];
    if (options.reference) {
      for (const name of Object.keys(YARDSTICKS) as Yardstick[]) {
        yardsticks.set(name, await startServer(url, { yardstick: name }));
      }
    }
    // Each scenario runs against the app and then, back to back, against the yardsticks: this
    // machine's speed drifts over minutes, and the ratios should not drift with it.
    const rows: Row[] = [];
    for (const scenario of scenarios.filter((s) => !options.only || options.only.has(s.name))) {
      const onLoad = (run: typeof profiled) => (profiled = run);
      rows.push(await runScenario(server, scenario, token, options, size.name, onLoad));
      await waitForIdleDatabase(url);
      if (!REFERENCE_SCENARIOS.has(scenario.name)) continue;
      for (const [name, yardstick] of yardsticks) {
        const renamed = { ...scenario, name: yardstickRowName(name, scenario.name) };
        rows.push(await runScenario(yardstick, renamed, token, options, size.name));
        await waitForIdleDatabase(url);
      }
    }
    const walks = options.walks
      ? await benchWalks(server, url, token, maxActivityId, options.only, () => startServer(url))
      : [];
    const tokens = { unscoped: token, scoped: scoped.token, organizationId: scoped.organizationId };
    const wanted = (name: string) => !options.only || options.only.has(name);
    const matrix =
      options.matrix && wanted('M') ? await benchMatrix(server, url, tokens) : undefined;
    if (matrix) matrix.summary.peakRssMiB = server.peakRssMiB();
    const probe = options.probe && wanted('P') ? await benchProbe(server, url, tokens) : undefined;
    // The mixed load has a server of its own (recounting every 10 s); this one stands idle.
    const mixed =
      options.mixed && wanted('X')
        ? await benchMixed(url, tokens, {
            duration: options.mixedDuration,
            connections: options.connections,
          })
        : undefined;
    // The bounded heap has a server of its own too (NODE_HEAP_MAX_MB=--memory-heap-mb).
    const memory =
      options.memory && wanted('H')
        ? await benchMemory(url, tokens, {
            duration: options.mixedDuration,
            connections: options.connections,
            heapMaxMb: options.memoryHeapMb,
          })
        : undefined;
    return { rows, walks, matrix, probe, mixed, memory };
  } finally {
    await server.stop();
    for (const yardstick of yardsticks.values()) await yardstick.stop();
    if (profileDir && profiled) {
      const since = (at: number) => (at - server.spawnedAt) * 1000;
      printProfile(
        profileDir,
        profiled.requests,
        since(profiled.startedAt),
        since(profiled.endedAt),
      );
    }
    if (profileDir && !process.env.BENCH_KEEP_PROFILE) {
      rmSync(profileDir, { recursive: true, force: true });
    } else if (profileDir) console.log(`[bench] profile kept in ${profileDir}`);
  }
}

/**
 * Waits until the bench database runs no statement but this one (the app's are prepared:
 * `Execute`, not `Query`; other databases' statements, such as another size being seeded, are
 * not the bench's to wait for): requests the load generator gave up on
 * (S3 at large size, above all on the yardsticks, which have no statement limit) keep running on
 * the server after the load stops, and would slow the next scenario down.
 */
async function waitForIdleDatabase(url: string, timeoutMs = 120_000): Promise<void> {
  const connection = await createConnection({ uri: url });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [[row]] = await connection.query<RowDataPacket[]>(
        `SELECT COUNT(*) AS running FROM information_schema.PROCESSLIST
          WHERE COMMAND IN ('Query', 'Execute') AND ID <> CONNECTION_ID() AND DB = DATABASE()`,
      );
      if (Number(row.running) === 0) return;
      if (Date.now() > deadline) {
        console.log(`[bench] ${row.running} statements still running; going on`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await connection.end();
  }
}

/** The scenarios the hand-written reference server answers (plain pages, no filters; a bad token). */
const REFERENCE_SCENARIOS = new Set(['S1', 'S2', 'S3', 'S4']);

async function runScenario(
  server: RunningServer,
  scenario: Scenario,
  token: string,
  options: BenchOptions,
  sizeName: string,
  onLoad: (run: { requests: number; startedAt: number; endedAt: number }) => void = () => undefined,
): Promise<Row> {
  const headers: Record<string, string> =
    scenario.token === 'none'
      ? {}
      : { authorization: `Bearer ${scenario.token === 'good' ? token : BAD_TOKEN}` };
  const check = await fetch(`${server.baseUrl}${scenario.path}`, { headers });
  if (check.status !== scenario.expectedStatus) {
    throw new Error(
      `${scenario.name} ${scenario.path}: expected ${scenario.expectedStatus}, got ${check.status} ${await check.text()}`,
    );
  }
  const sequentialMedianMs = scenario.sequential
    ? await sequentialMedian(server, scenario.path, headers, scenario.sequential, scenario.walk)
    : undefined;
  const target = {
    url: `${server.baseUrl}${scenario.path}`,
    connections: options.connections,
    headers,
  };
  if (options.warmup > 0) await autocannon({ ...target, duration: options.warmup });
  const startedAt = performance.now();
  const cpuBefore = server.cpuSeconds();
  const loadCpuBefore = process.cpuUsage();
  const hostBefore = readHostCpuTimes();
  const result = await autocannon({ ...target, duration: options.duration });
  const cpuSeconds = server.cpuSeconds() - cpuBefore;
  const steal = stealPercent(hostBefore, readHostCpuTimes());
  const loadCpu = process.cpuUsage(loadCpuBefore);
  const perRequest = (micros: number) =>
    result.requests.total > 0 ? micros / result.requests.total : NaN;
  onLoad({ requests: result.requests.total, startedAt, endedAt: performance.now() });
  const unexpectedStatuses = Object.entries(result.statusCodeStats).filter(
    ([status]) => Number(status) !== scenario.expectedStatus,
  );
  const unexpected = unexpectedStatuses.reduce((sum, [, stats]) => sum + stats.count, 0);
  const row: Row = {
    scenario: scenario.name,
    path: scenario.path,
    reqPerSec: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    // autocannon counts a timeout among its errors too.
    errors: unexpected + result.errors,
    sequentialMedianMs,
    peakRssMiB: server.peakRssMiB(),
    cpuMicrosPerRequest: perRequest(cpuSeconds * 1e6),
    loadCpuMicrosPerRequest: perRequest(loadCpu.user + loadCpu.system),
    stealPercent: steal,
  };
  console.log(
    `[bench] ${sizeName} ${row.scenario}: ${row.reqPerSec.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ` +
      (Number.isNaN(row.cpuMicrosPerRequest)
        ? 'no request served'
        : `${row.cpuMicrosPerRequest.toFixed(0)} µs CPU/request`) +
      (row.stealPercent === undefined ? '' : `, host steal ${row.stealPercent.toFixed(0)}%`) +
      // What the errors column counts, told apart: a refusal and a reply too slow are not alike.
      (row.errors > 0
        ? `; errors: ${[
            ...unexpectedStatuses.map(([status, stats]) => `${stats.count} × ${status}`),
            `${result.timeouts} timed out (autocannon's 10 s)`,
            `${result.errors - result.timeouts} failed connections`,
          ].join(', ')}`
        : ''),
  );
  return row;
}

function printProfile(dir: string, requests: number, fromMicros: number, toMicros: number): void {
  const print = (heading: string, stages: StageShare[]) => {
    const busyMicros = stages.reduce((sum, stage) => sum + stage.microsPerRequest, 0);
    console.log(
      `\n[bench] server CPU per request: ${busyMicros.toFixed(0)} µs over ${requests} requests, ${heading}:`,
    );
    for (const stage of stages.filter((s) => s.share >= 0.005)) {
      console.log(
        `  ${stage.stage.padEnd(72)} ${(stage.share * 100).toFixed(1).padStart(5)}%  ${stage.microsPerRequest.toFixed(0).padStart(5)} µs`,
      );
    }
  };
  const { byPackage, byPhase } = summarizeProfiles(dir, requests, fromMicros, toMicros);
  print('by package', byPackage);
  print('by phase of the request', byPhase);
}

async function getJson(
  server: RunningServer,
  path: string,
  token: string,
): Promise<{ pagination: Record<string, unknown> }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json() as Promise<{ pagination: Record<string, unknown> }>;
}

async function sequentialMedian(
  server: RunningServer,
  path: string,
  headers: Record<string, string>,
  count: number,
  walk = false,
): Promise<number> {
  const times: number[] = [];
  let next = path;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await fetch(`${server.baseUrl}${next}`, { headers });
    const body = (await response.json()) as { data: { id: number }[] };
    times.push(performance.now() - started);
    if (walk) next = path.replace(/after_id=\d+/, `after_id=${body.data.at(-1)?.id ?? 0}`);
  }
  times.sort((a, b) => a - b);
  return (times[Math.floor((count - 1) / 2)] + times[Math.ceil((count - 1) / 2)]) / 2;
}

async function printMachine(): Promise<void> {
  const connection = await createConnection({
    uri: process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306',
  });
  try {
    const [[version]] = await connection.query<RowDataPacket[]>('SELECT VERSION() AS v');
    const [settings] = await connection.query<RowDataPacket[]>(
      `SHOW VARIABLES WHERE Variable_name IN ('innodb_buffer_pool_size',
        'innodb_flush_log_at_trx_commit', 'innodb_log_file_size', 'max_connections')`,
    );
    console.log(
      `\nmachine: ${cpus().length} × ${cpus()[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ` +
        `load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}, node ${process.version}`,
    );
    console.log(
      `database: ${version.v}; ${settings.map((s) => `${s.Variable_name}=${s.Value}`).join(', ')}`,
    );
  } finally {
    await connection.end();
  }
}

const loadAverage = () =>
  loadavg()
    .map((load) => load.toFixed(2))
    .join(' ');

/** A per-request CPU figure for the table; blank when no request was served. */
const microsCell = (micros: number): string => (Number.isNaN(micros) ? '' : micros.toFixed(0));

function printTable(size: BenchSize, rows: Row[], options: BenchOptions, load: string): void {
  console.log(
    `\n${size.name}: ${size.users} users / ${size.activities} login activities; ` +
      `${options.connections} connections × ${options.duration} s per scenario; ${load}`,
  );
  const header = [
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'max ms',
    'errors',
    'seq. median ms',
    'CPU µs/req',
    'peak RSS MiB',
    'load gen. CPU µs/req',
    'steal %',
  ];
  const lines = rows.map((row) => [
    row.scenario,
    row.reqPerSec.toFixed(0),
    String(row.p50),
    String(row.p99),
    String(row.max),
    String(row.errors),
    row.sequentialMedianMs === undefined ? '' : row.sequentialMedianMs.toFixed(1),
    microsCell(row.cpuMicrosPerRequest),
    row.peakRssMiB.toFixed(0),
    microsCell(row.loadCpuMicrosPerRequest),
    row.stealPercent === undefined ? '' : row.stealPercent.toFixed(0),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((l) => l[i].length)));
  const format = (cells: string[]) =>
    `| ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(' | ')} |`;
  console.log(format(header));
  console.log(
    `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  );
  for (const line of lines) console.log(format(line));
  for (const row of rows.filter((r) => isAppRow(r.scenario))) {
    console.log(`  ${row.scenario}: ${row.path}`);
  }
  for (const row of rows) {
    const referenceName = yardstickRowName('ref', scenarioOf(row.scenario));
    if (row.scenario === referenceName) continue;
    const reference = rows.find((r) => r.scenario === referenceName);
    if (!reference) continue;
    if (reference.reqPerSec === 0 || row.reqPerSec === 0) {
      const silent =
        reference.reqPerSec === 0 && row.reqPerSec === 0
          ? 'neither answered any request'
          : `${row.reqPerSec === 0 ? 'it' : 'the hand-written server'} answered none`;
      console.log(
        `  ${row.scenario} vs the hand-written server: ${silent} under load within autocannon's 10 s timeout` +
          (reference.sequentialMedianMs !== undefined && row.sequentialMedianMs !== undefined
            ? `; sequential median ${(row.sequentialMedianMs / reference.sequentialMedianMs).toFixed(2)}× its time`
            : ''),
      );
      continue;
    }
    const throughput = row.reqPerSec / reference.reqPerSec;
    const perRequest =
      row.sequentialMedianMs !== undefined && reference.sequentialMedianMs !== undefined
        ? `, sequential median ${(row.sequentialMedianMs / reference.sequentialMedianMs).toFixed(2)}× its time`
        : '';
    const cpu = row.cpuMicrosPerRequest / reference.cpuMicrosPerRequest;
    console.log(
      `  ${row.scenario} vs the hand-written server: ${(throughput * 100).toFixed(0)}% of its req/s, ` +
        `${cpu.toFixed(2)}× its CPU per request${perRequest}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
