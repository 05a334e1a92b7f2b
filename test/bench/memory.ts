/**
 * H, the bounded heap (`--memory`, issue 33.3): the built app under `--max-old-space-size=128`
 * (NODE_HEAP_MAX_MB=128 through the production flags) takes 60 s of mixed load at 32 connections:
 * X's pages, keyset and cursor steps, NDJSON exports and rejected tokens in rotation. It must not
 * crash nor answer any 5xx; the server's peak RSS (VmHWM) is reported.
 */
import autocannon from 'autocannon';
import { startServer } from './bench-server';
import type { MatrixTokens } from './matrix';
import { requestsFor } from './mixed';

export interface MemoryResult {
  heapMaxMb: number;
  durationSeconds: number;
  connections: number;
  requests: number;
  statuses: Record<string, number>;
  /** Replies of 500 and above, and replies a path was not meant to get (a 401 for a good token). */
  serverErrors: number;
  unexpected: number;
  errors: number;
  timeouts: number;
  p99: number;
  max: number;
  peakRssMiB: number;
  /** The process was still up and answered /health/live after the load. */
  survived: boolean;
  perPath: { name: string; statuses: Record<string, number> }[];
  passed: boolean;
}

const BAD_TOKEN = `lsk_${'B'.repeat(43)}`;
const NDJSON = 'application/x-ndjson';

export async function benchMemory(
  databaseUrl: string,
  tokens: MatrixTokens,
  options: { duration: number; connections: number; heapMaxMb: number },
): Promise<MemoryResult> {
  const server = await startServer(databaseUrl, {
    extraEnv: { NODE_HEAP_MAX_MB: String(options.heapMaxMb) },
  });
  try {
    const pages = await requestsFor(server.baseUrl, databaseUrl, tokens);
    const u = tokens.unscoped;
    const rotation = [
      ...pages.map((page) => ({ ...page, accept: 'application/json', expected: 200 })),
      // Exports stream every matching row: the load's largest replies.
      { name: 'export users', path: '/v1/users', token: u, accept: NDJSON, expected: 200 },
      {
        name: 'export failures',
        path: '/v1/login_activities?success=false',
        token: u,
        accept: NDJSON,
        expected: 200,
      },
      {
        name: 'export scoped activities',
        path: '/v1/login_activities',
        token: tokens.scoped,
        accept: NDJSON,
        expected: 200,
      },
      {
        name: 'bad token users',
        path: '/v1/users',
        token: BAD_TOKEN,
        accept: '*/*',
        expected: 401,
      },
      {
        name: 'bad token export',
        path: '/v1/login_activities',
        token: BAD_TOKEN,
        accept: NDJSON,
        expected: 401,
      },
    ];
    const perPath = rotation.map((r) => ({ name: r.name, statuses: {} as Record<string, number> }));
    let unexpected = 0;
    const result = await autocannon({
      url: server.baseUrl,
      connections: options.connections,
      duration: options.duration,
      // An export of every failed login of the large set takes seconds under this load.
      timeout: 60,
      requests: rotation.map((r, i) => ({
        method: 'GET',
        path: r.path,
        headers: { authorization: `Bearer ${r.token}`, accept: r.accept },
        onResponse: (status: number) => {
          const statuses = perPath[i].statuses;
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status !== r.expected) unexpected++;
        },
      })),
    });
    const peakRssMiB = server.peakRssMiB();
    const survived = await fetch(`${server.baseUrl}/health/live`).then(
      (response) => response.ok,
      () => false,
    );
    const statuses = Object.fromEntries(
      Object.entries(result.statusCodeStats).map(([status, stats]) => [status, stats.count]),
    );
    const serverErrors = Object.entries(statuses)
      .filter(([status]) => Number(status) >= 500)
      .reduce((sum, [, n]) => sum + n, 0);
    const memory: MemoryResult = {
      heapMaxMb: options.heapMaxMb,
      durationSeconds: options.duration,
      connections: options.connections,
      requests: result.requests.total,
      statuses,
      serverErrors,
      unexpected,
      errors: result.errors,
      timeouts: result.timeouts,
      p99: result.latency.p99,
      max: result.latency.max,
      peakRssMiB,
      survived,
      perPath,
      passed: survived && serverErrors === 0 && unexpected === 0 && result.errors === 0,
    };
    printMemory(memory);
    return memory;
  } finally {
    await server.stop();
  }
}

function printMemory(m: MemoryResult): void {
  const statuses = Object.entries(m.statuses)
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ');
  console.log(
    `\nH: --max-old-space-size=${m.heapMaxMb}, ${m.perPath.length} paths in rotation, ` +
      `${m.connections} connections × ${m.durationSeconds} s`,
  );
  console.log(
    `H: ${m.requests} requests; ${statuses}; ${m.serverErrors} × 5xx, ${m.unexpected} unexpected; ` +
      `errors ${m.errors} (timeouts ${m.timeouts}); p99 ${m.p99} ms, max ${m.max} ms; ` +
      `peak RSS ${m.peakRssMiB.toFixed(0)} MiB; ${m.survived ? 'still up' : 'NOT UP'}: ` +
      (m.passed ? 'passed' : 'FAILED'),
  );
  for (const p of m.perPath) {
    const line = Object.entries(p.statuses)
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ');
    console.log(`  ${p.name.padEnd(26)} ${line || 'no reply'}`);
  }
}
