/**
 * The consumers' whole jobs, measured against the database's own client in the same run:
 * - W1/W2: one sequential client follows `Link: rel="next"` for a fixed time (rows/s, and the
 *   median step of the last tenth over the first tenth: a walk whose steps grow with depth shows);
 * - X1: an NDJSON export of the whole login-activity table (rows/s, the server's peak RSS, bytes on
 *   the wire with and without gzip);
 * - X2: an NDJSON export of a 30-day window of users' `updated_at` in id order, a window whose
 *   matches the histograms cannot place in id order when ids do not follow time (the bench's);
 * - K: keyset steps (`after_id`) that each enter a new id bucket (median and maximum).
 * The reference is `mariadb --quick` dumping the same columns of the same rows.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import type { RunningServer } from './bench-server';

export interface WalkRow {
  name: string;
  path: string;
  rows: number;
  rowsPerSec: number;
  /** rowsPerSec over the dump's. */
  ratio: number;
  detail: string;
  /** The server's peak RSS (X1, whose server is its own). */
  peakRssMiB?: number;
}

const ACTIVITY_COLUMNS =
  'id, user_email, authentication_method, oauth_provider, ip_address, otp_required, success, ' +
  'failure_reason, user_agent, created_at, user_id, session_id';
const USER_COLUMNS =
  'u.id, u.name, u.email, u.role_id, r.name, u.organization_id, o.name, u.created_at, u.updated_at';

/** Rows a second `mariadb --quick` dumps of `sql` (its output thrown away as it comes). */
export async function dumpRowsPerSec(databaseUrl: string, sql: string): Promise<number> {
  const url = new URL(databaseUrl);
  const args = [
    '--quick',
    '--batch',
    '--skip-column-names',
    `--host=${url.hostname}`,
    `--port=${url.port || '3306'}`,
    `--user=${decodeURIComponent(url.username || 'root')}`,
    ...(url.password ? [`--password=${decodeURIComponent(url.password)}`] : []),
    url.pathname.slice(1),
    '-e',
    sql,
  ];
  const started = performance.now();
  const lines = await new Promise<number>((resolve, reject) => {
    const child = spawn('mariadb', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let count = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) count++;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(count) : reject(new Error(`mariadb ${code}`)),
    );
  });
  return lines / ((performance.now() - started) / 1000);
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  wireBytes: number;
  lines: number;
}

/** A GET that counts the bytes on the wire (undecoded) and, unless `keepBody`, only the lines. */
function get(
  server: RunningServer,
  path: string,
  headers: Record<string, string>,
  keepBody = true,
): Promise<Reply> {
  const url = new URL(path, server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (response) => {
      const parts: Buffer[] = [];
      let wireBytes = 0;
      let lines = 0;
      response.on('data', (chunk: Buffer) => {
        wireBytes += chunk.length;
        if (keepBody) parts.push(chunk);
        else for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
      });
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(parts).toString(),
          wireBytes,
          lines,
        }),
      );
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const nextLink = (link: string | string[] | undefined): string | undefined =>
  /<([^>]*)>;\s*rel="next"/.exec(String(link ?? ''))?.[1];

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : NaN;
};

/** Follows `next` from `path` for `seconds`, one request at a time. */
async function walk(
  server: RunningServer,
  name: string,
  path: string,
  token: string,
  seconds: number,
  dump: number,
): Promise<WalkRow> {
  const headers = { authorization: `Bearer ${token}` };
  const steps: number[] = [];
  let rows = 0;
  let url: string | undefined = path;
  const started = performance.now();
  while (url && performance.now() - started < seconds * 1000) {
    const before = performance.now();
    const reply = await get(server, url, headers);
    if (reply.status !== 200) throw new Error(`${name} ${url}: ${reply.status} ${reply.body}`);
    steps.push(performance.now() - before);
    const items = (JSON.parse(reply.body) as { data: unknown[] }).data.length;
    rows += items;
    url = items > 0 ? nextLink(reply.headers.link) : undefined;
  }
  const elapsed = (performance.now() - started) / 1000;
  const tenth = Math.max(1, Math.floor(steps.length / 10));
  const first = median(steps.slice(0, tenth));
  const last = median(steps.slice(-tenth));
  return {
    name,
    path,
    rows,
    rowsPerSec: rows / elapsed,
    ratio: rows / elapsed / dump,
    detail:
      `${steps.length} steps, median step ${median(steps).toFixed(1)} ms, first tenth ${first.toFixed(1)} ms, ` +
      `last tenth ${last.toFixed(1)} ms, last/first ${(last / first).toFixed(2)}`,
  };
}

export async function benchWalks(
  server: RunningServer,
  databaseUrl: string,
  token: string,
  maxActivityId: number,
  only: Set<string> | undefined,
  /** A server of its own for X1, so that its peak RSS is the export's alone. */
  freshServer: () => Promise<RunningServer>,
): Promise<WalkRow[]> {
  const wanted = (name: string) => !only || only.has(name);
  const rows: WalkRow[] = [];
  const log = (row: WalkRow) => {
    rows.push(row);
    const rate = Number.isNaN(row.ratio)
      ? ''
      : `${row.rows} rows, ${row.rowsPerSec.toFixed(0)} rows/s = ${row.ratio.toFixed(3)}x the dump; `;
    console.log(`[bench] ${row.name}: ${rate}${row.detail}`);
  };
  // The whole tables' dumps, only for the jobs measured against them (50M rows take minutes).
  const [activityDump, userDump] = ['W1', 'W2', 'X1'].some(wanted)
    ? [
        await dumpRowsPerSec(databaseUrl, `SELECT ${ACTIVITY_COLUMNS} FROM login_activities`),
        await dumpRowsPerSec(
          databaseUrl,
          `SELECT ${USER_COLUMNS} FROM users u JOIN roles r ON r.id = u.role_id JOIN organizations o ON o.id = u.organization_id`,
        ),
      ]
    : [NaN, NaN];
  if (!Number.isNaN(activityDump)) {
    console.log(
      `[bench] mariadb --quick dump: login_activities ${activityDump.toFixed(0)} rows/s, users ${userDump.toFixed(0)} rows/s`,
    );
  }
  if (wanted('W1')) {
    log(await walk(server, 'W1', '/v1/login_activities?limit=100', token, 20, activityDump));
  }
  if (wanted('W2')) {
    log(await walk(server, 'W2 users', '/v1/users?sort=updated_at&limit=100', token, 20, userDump));
    log(
      await walk(
        server,
        'W2 failures',
        '/v1/login_activities?success=false&sort=-created_at&limit=100',
        token,
        20,
        activityDump,
      ),
    );
  }
  if (wanted('X1')) {
    const accept = { authorization: `Bearer ${token}`, accept: 'application/x-ndjson' };
    const exporter = await freshServer();
    let plain: Reply;
    let seconds: number;
    let peak: number;
    let gzipped: Reply;
    try {
      const started = performance.now();
      plain = await get(exporter, '/v1/login_activities', accept, false);
      seconds = (performance.now() - started) / 1000;
      peak = exporter.peakRssMiB();
      gzipped = await get(
        exporter,
        '/v1/login_activities',
        { ...accept, 'accept-encoding': 'gzip' },
        false,
      );
    } finally {
      await exporter.stop();
    }
    log({
      name: 'X1',
      path: '/v1/login_activities (Accept: application/x-ndjson)',
      rows: plain.lines,
      rowsPerSec: plain.lines / seconds,
      ratio: plain.lines / seconds / activityDump,
      peakRssMiB: peak,
      detail:
        `server peak RSS ${peak.toFixed(0)} MiB, ${(plain.wireBytes / 2 ** 20).toFixed(0)} MiB on the wire plain, ` +
        `${(gzipped.wireBytes / 2 ** 20).toFixed(0)} MiB with gzip (${String(gzipped.headers['content-encoding'] ?? 'none')})`,
    });
  }
  if (wanted('X2')) {
    const from = new Date(Math.floor((Date.now() - 30 * 86_400_000) / 1000) * 1000);
    const sqlFrom = from.toISOString().slice(0, 19).replace('T', ' ');
    const windowDump = await dumpRowsPerSec(
      databaseUrl,
      `SELECT ${USER_COLUMNS} FROM users u JOIN roles r ON r.id = u.role_id JOIN organizations o ON o.id = u.organization_id WHERE u.updated_at >= '${sqlFrom}' ORDER BY u.id`,
    );
    const path = `/v1/users?updated_from=${from.toISOString()}&sort=id`;
    const started = performance.now();
    const reply = await get(
      server,
      path,
      { authorization: `Bearer ${token}`, accept: 'application/x-ndjson' },
      false,
    );
    if (reply.status !== 200) throw new Error(`X2 ${path}: ${reply.status}`);
    const seconds = (performance.now() - started) / 1000;
    log({
      name: 'X2',
      path: `${path} (Accept: application/x-ndjson)`,
      rows: reply.lines,
      rowsPerSec: reply.lines / seconds,
      ratio: reply.lines / seconds / windowDump,
      detail: `${seconds.toFixed(1)} s; the dump of the same rows ${windowDump.toFixed(0)} rows/s`,
    });
  }
  if (wanted('K')) {
    const headers = { authorization: `Bearer ${token}` };
    const bucket = 4096;
    // The first keyset step builds the walk's histogram (once per COUNT_CACHE_FULL_RECOUNT_MS).
    const buildStarted = performance.now();
    await get(server, '/v1/login_activities?after_id=1&limit=20', headers);
    const build = performance.now() - buildStarted;
    const steps: number[] = [];
    const buckets = Math.floor(maxActivityId / bucket);
    for (let i = 1; i <= 40; i++) {
      const bound = Math.floor((buckets * i) / 41) * bucket + 7;
      const before = performance.now();
      const reply = await get(server, `/v1/login_activities?after_id=${bound}&limit=20`, headers);
      if (reply.status !== 200) throw new Error(`K: ${reply.status} ${reply.body}`);
      steps.push(performance.now() - before);
    }
    const med = median(steps);
    const max = Math.max(...steps);
    log({
      name: 'K',
      path: '/v1/login_activities?after_id=<a new bucket each step>&limit=20',
      rows: steps.length,
      rowsPerSec: NaN,
      ratio: NaN,
      detail: `${steps.length} steps into new buckets: median ${med.toFixed(1)} ms, max ${max.toFixed(1)} ms (max/median ${(max / med).toFixed(2)}); the first step, which built the histogram, ${build.toFixed(0)} ms`,
    });
  }
  return rows;
}
