/**
 * Fault drill (issue 28, point 4; issue 34, point 4): `npm run drill [-- --seconds 30 ...]`. See
 * docs/operations.md.
 *
 * Starts a private MariaDB primary with a replica of it, and Redis, two app instances behind a
 * round-robin proxy (plus a pair with a low rate limit for the rate-limit check), and runs one
 * mixed load per fault: a primary restart, a Redis crash and return, the replica killed and
 * brought back, the replica's SQL thread stopped and started, SIGTERM to one instance. During the
 * replica faults logins are appended on the primary and a tail walk follows them. Results go to
 * .bench/drill/<time>/.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatOutcomes, Load, PhaseSummary, RequestRecord, summarize } from './load';
import {
  LoginWriter,
  queriesByTarget,
  RotationWatch,
  TailFollower,
  TailOutcome,
  tailOutcome,
} from './replica-faults';
import {
  AppInstance,
  buildIfStale,
  createToken,
  PrivateRedis,
  ReplicatedMariaDb,
  resultsFolder,
  RoundRobinProxy,
  seededDatabase,
  say,
  sleep,
} from './services';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    'fault-at': { type: 'string', default: '8' },
    'redis-down': { type: 'string', default: '6' },
    concurrency: { type: 'string', default: '16' },
    rate: { type: 'string', default: '200' },
    users: { type: 'string', default: '20000' },
    activities: { type: 'string', default: '200000' },
    'statement-ms': { type: 'string', default: '5000' },
    'rate-limit': { type: 'string', default: '20' },
    'replica-down': { type: 'string', default: '6' },
    'replica-max-lag-ms': { type: 'string', default: '5000' },
    'replica-stalled': { type: 'string', default: '10' },
    faults: { type: 'string', default: 'mariadb,redis,replica-kill,replica-lag,sigterm' },
  },
  strict: true,
});
const LOAD_MS = Number(args.seconds) * 1000;
const FAULT_AT_MS = Number(args['fault-at']) * 1000;
const REDIS_DOWN_MS = Number(args['redis-down']) * 1000;
const STATEMENT_MS = Number(args['statement-ms']);
const HANG_LIMIT_MS = STATEMENT_MS + 1000;
const CLIENT_TIMEOUT_MS = STATEMENT_MS + 2000;
const RATE_LIMIT = Number(args['rate-limit']);
const REPLICA_DOWN_MS = Number(args['replica-down']) * 1000;
const REPLICA_MAX_LAG_MS = Number(args['replica-max-lag-ms']);
const REPLICA_STALLED_MS = Number(args['replica-stalled']) * 1000;
/** After the load, how long the tail walk may take to serve the last appended rows. */
const TAIL_FINISH_MS = 60_000;
const FAULTS = args.faults.split(',').map((f) => f.trim());

interface RateLimitProbe {
  /** Replies of `RATE_LIMIT + 5` requests of one fresh token to each instance, in turn. */
  perInstance: { instance: string; ok: number; limited: number; other: number }[];
}

interface FaultResult {
  fault: string;
  description: string;
  /** Seconds from the load's start. */
  faultStartS: number;
  faultEndS: number;
  phases: Record<'before' | 'during' | 'after', PhaseSummary>;
  /** From the fault's end to the end of the first 200 whose request was sent after it. */
  firstOkAfterEndMs: number | null;
  /** The last reply other than 200 among requests sent after the fault's end (seconds after it). */
  lastNotOkAfterEndS: number | null;
  noReply: { path: string; error?: string; atS: number }[];
  rateLimit?: { redisUp: RateLimitProbe; redisDown: RateLimitProbe };
  /** Database statements of both instances between the load's start and the fault's. */
  statementsBefore?: { requests: number; primary: number; replica: number };
  /** Replica faults: what the tail walk served of the logins appended meanwhile. */
  tail?: TailOutcome;
  notes: string[];
  records: RequestRecord[];
}

async function probeRateLimit(instances: AppInstance[], token: string): Promise<RateLimitProbe> {
  const perInstance = [];
  for (const instance of instances) {
    const counts = { instance: instance.name, ok: 0, limited: 0, other: 0 };
    for (let i = 0; i < RATE_LIMIT + 5; i++) {
      const response = await fetch(`${instance.baseUrl}/v1/users?limit=1`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      await response.arrayBuffer();
      if (response.status === 200) counts.ok++;
      else if (response.status === 429) counts.limited++;
      else counts.other++;
    }
    perInstance.push(counts);
  }
  return { perInstance };
}

const formatProbe = (probe: RateLimitProbe) =>
  probe.perInstance
    .map(
      (p) => `${p.instance}: ${p.ok}×200, ${p.limited}×429${p.other ? `, ${p.other} other` : ''}`,
    )
    .join('; ');

async function main(): Promise<void> {
  buildIfStale();
  const folder = resultsFolder('drill');
  say(`results and logs in ${folder}`);
  const servers = new ReplicatedMariaDb({ logFolder: folder });
  const db = servers.primary;
  const redis = new PrivateRedis();
  const apps: AppInstance[] = [];
  let proxy: RoundRobinProxy | undefined;
  const cleanUp = async () => {
    await proxy?.stop();
    await Promise.all(apps.map((app) => app.stop()));
    await redis.kill();
    await servers.remove();
  };
  process.once('SIGINT', () => void cleanUp().then(() => process.exit(130)));

  try {
    await servers.start();
    say(`private MariaDB primary on port ${db.port}, its replica on ${servers.replica.port}`);
    await redis.start();
    say(`private Redis on port ${redis.port}`);
    const { databaseUrl, shape } = await seededDatabase(db, 'listing_drill', args);
    await servers.caughtUp(600_000);
    const replicaUrl = `${servers.replica.url}/listing_drill`;
    const token = await createToken('drill', databaseUrl);
    // Fresh tokens (untouched budgets) for the rate-limit check, made ahead of the load.
    const probeTokens = {
      redisUp: await createToken('drill-rate-redis-up', databaseUrl),
      redisDown: await createToken('drill-rate-redis-down', databaseUrl),
    };

    const env = (perMinute: number) => ({
      DATABASE_URL: databaseUrl,
      DATABASE_REPLICA_URLS: replicaUrl,
      REPLICA_MAX_LAG_MS: String(REPLICA_MAX_LAG_MS),
      REDIS_URL: redis.url,
      DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS),
      RATE_LIMIT_PER_MINUTE: String(perMinute),
    });
    const a = new AppInstance('A', env(1_000_000), join(folder, 'app-A.log'));
    const b = new AppInstance('B', env(1_000_000), join(folder, 'app-B.log'));
    const c = new AppInstance('C', env(RATE_LIMIT), join(folder, 'app-C.log'));
    const d = new AppInstance('D', env(RATE_LIMIT), join(folder, 'app-D.log'));
    apps.push(a, b, c, d);
    await Promise.all(apps.map((app) => app.start()));
    const live = [a, b];
    proxy = new RoundRobinProxy(() => live.map((app) => app.port));
    await proxy.start();
    say(`instances A, B behind the proxy on port ${proxy.port}; C, D (limit ${RATE_LIMIT}/min)`);

    const results: FaultResult[] = [];
    for (const fault of FAULTS) {
      const load = new Load({
        baseUrl: `http://127.0.0.1:${proxy.port}`,
        token,
        concurrency: Number(args.concurrency),
        ratePerSecond: Number(args.rate),
        timeoutMs: CLIENT_TIMEOUT_MS,
        shape,
      });
      const notes: string[] = [];
      let rateLimit: FaultResult['rateLimit'];
      let description = '';
      const replicaFault = fault.startsWith('replica-');
      if (replicaFault) {
        // A fault before (the primary's restart) may have left the replica out for a while.
        const before = new RotationWatch([a, b]);
        before.start();
        await before.allIn();
        await before.stop();
      }
      const statementsAtStart = await queriesByTarget([a, b]);
      const [{ maxId }] = await db.query<{ maxId: number | null }[]>(
        'SELECT MAX(id) AS maxId FROM listing_drill.login_activities',
      );
      const writer = replicaFault ? new LoginWriter(databaseUrl) : undefined;
      const follower = replicaFault
        ? new TailFollower(`http://127.0.0.1:${proxy.port}`, token, Number(maxId ?? 0))
        : undefined;
      const watch = replicaFault ? new RotationWatch([a, b]) : undefined;
      const t0 = performance.now();
      load.start();
      writer?.start();
      follower?.start();
      say(`${fault}: load started`);
      let redisUp: RateLimitProbe | undefined;
      if (fault === 'redis') {
        redisUp = await probeRateLimit([c, d], probeTokens.redisUp);
        say(`rate limit with Redis up: ${formatProbe(redisUp)}`);
      }
      await sleep(Math.max(0, t0 + FAULT_AT_MS - performance.now()));
      const statementsAtFault = await queriesByTarget([a, b]);
      const requestsBefore = load.records.length;
      const faultStart = performance.now();
      watch?.start();
      let faultEnd: number;
      if (fault === 'mariadb') {
        description = 'MariaDB restarted (SIGTERM, wait for exit, start, wait until it answers)';
        await db.stop();
        notes.push(`MariaDB down after ${((performance.now() - faultStart) / 1000).toFixed(1)} s`);
        await db.start();
        faultEnd = performance.now();
      } else if (fault === 'redis') {
        description = `Redis killed (SIGKILL), started again ${REDIS_DOWN_MS / 1000} s later`;
        await redis.kill();
        const redisDown = await probeRateLimit([c, d], probeTokens.redisDown);
        say(`rate limit with Redis down: ${formatProbe(redisDown)}`);
        rateLimit = { redisUp: redisUp!, redisDown };
        await sleep(Math.max(0, faultStart + REDIS_DOWN_MS - performance.now()));
        await redis.start();
        faultEnd = performance.now();
      } else if (fault === 'replica-kill') {
        description =
          `replica killed (SIGKILL), started again ${REPLICA_DOWN_MS / 1000} s later; ` +
          'the window ends when A and B both have it back in the read rotation';
        await servers.replica.kill();
        await sleep(Math.max(0, faultStart + REPLICA_DOWN_MS - performance.now()));
        await servers.replica.start();
        await watch!.allIn();
        faultEnd = performance.now();
      } else if (fault === 'replica-lag') {
        description =
          `replica's SQL thread stopped for ${REPLICA_STALLED_MS / 1000} s (REPLICA_MAX_LAG_MS ` +
          `${REPLICA_MAX_LAG_MS} ms), then started; the window ends when A and B both have it back`;
        await servers.replica.query('STOP SLAVE SQL_THREAD');
        await watch!.someOut();
        await sleep(Math.max(0, faultStart + REPLICA_STALLED_MS - performance.now()));
        await servers.replica.query('START SLAVE SQL_THREAD');
        await watch!.allIn();
        faultEnd = performance.now();
      } else if (fault === 'sigterm') {
        description = 'SIGTERM to instance B of the two behind the proxy (not started again)';
        const code = await b.signal('SIGTERM');
        live.splice(live.indexOf(b), 1);
        faultEnd = performance.now();
        notes.push(
          `B exited with code ${code}, ${((faultEnd - faultStart) / 1000).toFixed(2)} s after SIGTERM`,
        );
      } else {
        throw new Error(`unknown fault ${fault}`);
      }
      say(
        `${fault}: fault from ${((faultStart - t0) / 1000).toFixed(1)} s to ${((faultEnd - t0) / 1000).toFixed(1)} s`,
      );
      await sleep(Math.max(0, t0 + LOAD_MS - performance.now()));
      await load.stop();
      await writer?.stop();
      await follower?.finish(writer?.committed ?? [], TAIL_FINISH_MS);
      await watch?.stop();
      for (const change of watch?.changes ?? []) {
        notes.push(
          `${change.instance}: replica ${change.inRotation ? 'back in the rotation' : `out (${change.reason})`} at ${((change.at - t0) / 1000).toFixed(1)} s`,
        );
      }
      const result = report(
        fault,
        description,
        load.records,
        t0,
        faultStart,
        faultEnd,
        notes,
        rateLimit,
      );
      result.statementsBefore = {
        requests: requestsBefore,
        primary: statementsAtFault.primary - statementsAtStart.primary,
        replica: statementsAtFault.replica - statementsAtStart.replica,
      };
      if (writer && follower) result.tail = tailOutcome(writer, follower, faultStart, faultEnd);
      results.push(result);
      say(`${fault}: ${formatOutcomes(results.at(-1)!.phases.during.byOutcome)} during the fault`);
    }

    const logLines = apps.flatMap((app) => app.logLines().map((line) => `${app.name}: ${line}`));
    const markdown = renderMarkdown(results, logLines);
    const saved = results.map(({ records: _records, ...rest }) => rest);
    writeFileSync(join(folder, 'drill.json'), JSON.stringify({ args, results: saved }, null, 2));
    writeFileSync(join(folder, 'drill.md'), markdown);
    writeFileSync(join(folder, 'app-log-lines.txt'), logLines.join('\n') + '\n');
    process.stdout.write(`\n${markdown}\n`);
    say(`written to ${folder}/drill.md`);
  } finally {
    await cleanUp();
  }
}

function report(
  fault: string,
  description: string,
  records: RequestRecord[],
  t0: number,
  faultStart: number,
  faultEnd: number,
  notes: string[],
  rateLimit: FaultResult['rateLimit'],
): FaultResult {
  // "during": every request in flight at some point of the fault, including those sent before it.
  const before = records.filter((r) => r.end < faultStart);
  const during = records.filter((r) => r.end >= faultStart && r.start < faultEnd);
  const after = records.filter((r) => r.start >= faultEnd);
  const firstOk = after
    .filter((r) => r.outcome === 200)
    .reduce((first, r) => Math.min(first, r.end), Infinity);
  const lastNotOk = after
    .filter((r) => r.outcome !== 200)
    .reduce((last, r) => Math.max(last, r.end), -Infinity);
  return {
    fault,
    description,
    faultStartS: round((faultStart - t0) / 1000),
    faultEndS: round((faultEnd - t0) / 1000),
    phases: {
      before: summarize(before, HANG_LIMIT_MS),
      during: summarize(during, HANG_LIMIT_MS),
      after: summarize(after, HANG_LIMIT_MS),
    },
    firstOkAfterEndMs: Number.isFinite(firstOk) ? Math.round(firstOk - faultEnd) : null,
    lastNotOkAfterEndS: Number.isFinite(lastNotOk) ? round((lastNotOk - faultEnd) / 1000) : null,
    noReply: records
      .filter((r) => typeof r.outcome !== 'number')
      .map((r) => ({ path: r.path, error: r.error, atS: round((r.start - t0) / 1000) })),
    rateLimit,
    notes,
    records,
  };
}

/** Log lines counted by kind: access lines by status, others by context and message shape. */
function groupLogLines(logLines: string[]): [string, number][] {
  const kinds = new Map<string, number>();
  for (const line of logLines) {
    const json = line.slice(line.indexOf('{'));
    let kind: string;
    try {
      const entry = JSON.parse(json) as {
        level?: number;
        context?: string;
        msg?: string;
        res?: { status?: number };
      };
      kind = entry.res
        ? `access log, level ${entry.level}, status ${entry.res.status}`
        : `level ${entry.level}, ${entry.context ?? '-'}: ${(entry.msg ?? '').replace(/\d+/g, 'N').slice(0, 160)}`;
    } catch {
      kind = `not JSON: ${line.slice(0, 160)}`;
    }
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return [...kinds].sort((a, b) => b[1] - a[1]);
}

const round = (n: number) => Math.round(n * 100) / 100;

function renderMarkdown(results: FaultResult[], logLines: string[]): string {
  const lines = [
    `Fault drill, ${new Date().toISOString()}: ${args.seconds} s of mixed load per fault ` +
      `(${args.concurrency} in flight, at most ${args.rate} req/s, through a round-robin proxy to ` +
      `two instances), ${args.users} users / ${args.activities} login activities, statement limit ` +
      `${STATEMENT_MS} ms (a hang is a request over ${HANG_LIMIT_MS} ms; the client gives up at ` +
      `${CLIENT_TIMEOUT_MS} ms).`,
    '',
    '| fault | phase | requests | replies by status | max ms | hangs |',
    '|---|---|---|---|---|---|',
  ];
  for (const result of results) {
    for (const phase of ['before', 'during', 'after'] as const) {
      const s = result.phases[phase];
      lines.push(
        `| ${result.fault} | ${phase} | ${s.requests} | ${formatOutcomes(s.byOutcome)} | ${s.maxLatencyMs} | ${s.hangs} |`,
      );
    }
  }
  lines.push(
    '',
    '| fault | what | fault window (s into the load) | fault end → first 200 | last non-200 after the end |',
    '|---|---|---|---|---|',
  );
  for (const r of results) {
    lines.push(
      `| ${r.fault} | ${r.description} | ${r.faultStartS}–${r.faultEndS} | ${r.firstOkAfterEndMs ?? '-'} ms | ${r.lastNotOkAfterEndS === null ? 'none' : `${r.lastNotOkAfterEndS} s`} |`,
    );
  }
  lines.push('');
  for (const r of results) {
    const total = Object.values(r.phases).reduce((sum, s) => sum + (s.byOutcome['500'] ?? 0), 0);
    lines.push(`- ${r.fault}: 500s: ${total}. ${r.notes.join('. ')}`.trim());
    const errors = r.records.filter((e) => typeof e.outcome === 'number' && e.outcome >= 400);
    if (errors.length) {
      const problem = errors.filter((e) => e.problemJson).length;
      const retry = errors.filter((e) => e.retryAfter).length;
      lines.push(
        `  - error replies: ${errors.length}; problem+json: ${problem}; with Retry-After: ${retry}`,
      );
    }
    if (r.noReply.length) {
      const kinds = new Map<string, number>();
      for (const n of r.noReply) kinds.set(n.error ?? '?', (kinds.get(n.error ?? '?') ?? 0) + 1);
      lines.push(
        `  - no reply: ${[...kinds].map(([k, n]) => `${n}× ${k}`).join(', ')} (at ${[...new Set(r.noReply.map((n) => `${n.atS} s`))].slice(0, 8).join(', ')})`,
      );
    }
    if (r.statementsBefore) {
      const { requests, primary, replica } = r.statementsBefore;
      lines.push(
        `  - database statements of A and B before the fault: ${requests} requests, ` +
          `${primary} on the primary (${((primary / Math.max(1, requests)) * 1000).toFixed(1)} per 1000 requests), ${replica} on the replica`,
      );
    }
    if (r.tail) {
      const t = r.tail;
      lines.push(
        `  - logins appended on the primary meanwhile: ${t.appended}; served by the tail walk: ${t.served}, ` +
          `missing ${t.missing}, served twice ${t.servedTwice}, out of order ${t.outOfOrder}; longest ` +
          `from commit to first served: ${t.longestWaitS.before ?? '-'} s for rows committed before the fault, ` +
          `${t.longestWaitS.during ?? '-'} s during it, ${t.longestWaitS.after ?? '-'} s after it; ` +
          `tail walk replies: ${formatOutcomes(t.replies)}`,
      );
    }
    if (r.rateLimit) {
      lines.push(
        `  - rate limit ${RATE_LIMIT}/min, ${RATE_LIMIT + 5} requests of one fresh token to C then D:` +
          ` Redis up: ${formatProbe(r.rateLimit.redisUp)}; Redis down: ${formatProbe(r.rateLimit.redisDown)}`,
      );
    }
  }
  lines.push('', 'App log lines at warn or above (LOG_LEVEL=warn), all instances, all faults:', '');
  for (const [kind, count] of groupLogLines(logLines)) lines.push(`- ${count}× ${kind}`);
  return lines.join('\n');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
