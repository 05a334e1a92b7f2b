/**
 * Soak (issue 28, point 5): `npm run soak [-- --minutes 20 --sample-minutes 5 --rate 50]`.
 * See docs/operations.md.
 *
 * One app instance on a private MariaDB under a steady mixed load; after each sample period it
 * reads RSS, heap used and the event loop's p99 lag from /metrics. prom-client resets its
 * event-loop histogram at each scrape, so each p99 covers exactly one period.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatOutcomes, Load, summarize } from './load';
import {
  AppInstance,
  buildIfStale,
  createToken,
  freePort,
  PrivateMariaDb,
  resultsFolder,
  seededDatabase,
  say,
  sleep,
} from './services';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '20' },
    'sample-minutes': { type: 'string', default: '5' },
    rate: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '8' },
    users: { type: 'string', default: '20000' },
    activities: { type: 'string', default: '200000' },
    'max-growth': { type: 'string', default: '10' },
  },
  strict: true,
});
const MINUTES = Number(args.minutes);
const SAMPLE_MS = Number(args['sample-minutes']) * 60_000;
const MAX_GROWTH_PERCENT = Number(args['max-growth']);
const STATEMENT_MS = 5000;

interface Sample {
  atMinutes: number;
  rssMiB: number;
  heapUsedMiB: number;
  oldSpaceMiB: number;
  liveHeapMiB: number;
  eventLoopP99Ms: number;
  requests: number;
  byOutcome: Record<string, number>;
  p99LatencyMs: number;
  maxLatencyMs: number;
}

/** The value of a series (`name` or `name{labels}` as printed) in Prometheus text format. */
function metric(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (!line) throw new Error(`metric ${series} not found`);
  return Number(line.slice(series.length + 1));
}

/**
 * Heap used right after a full garbage collection, through the inspector protocol (the app runs
 * with --inspect on a private port): the live heap, which instant readings hide under garbage
 * that the next major GC would free.
 */
async function liveHeapMiB(inspectPort: number): Promise<number> {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  const replies = new Map<number, (result: { usedSize?: number }) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: object };
    if (message.id !== undefined) replies.get(message.id)?.(message.result ?? {});
  });
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve);
    socket.addEventListener('error', reject);
  });
  let id = 0;
  const call = (method: string) =>
    new Promise<{ usedSize?: number }>((resolve) => {
      replies.set(++id, resolve);
      socket.send(JSON.stringify({ id, method }));
    });
  try {
    await call('HeapProfiler.collectGarbage');
    const usage = await call('Runtime.getHeapUsage');
    return (usage.usedSize ?? NaN) / 2 ** 20;
  } finally {
    socket.close();
  }
}

async function scrape(baseUrl: string) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return {
    rssMiB: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
    heapUsedMiB: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
    // Old space alone: total heap used swings by the young generation's fill at the instant.
    oldSpaceMiB: metric(text, 'nodejs_heap_space_size_used_bytes{space="old"}') / 2 ** 20,
    eventLoopP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
  };
}

const growth = (from: number, to: number) => ((to - from) / from) * 100;
const fixed = (n: number, digits = 1) => n.toFixed(digits);

async function main(): Promise<void> {
  buildIfStale();
  const folder = resultsFolder('soak');
  say(`results and logs in ${folder}`);
  const db = new PrivateMariaDb({ logPath: join(folder, 'mariadb.log') });
  let app: AppInstance | undefined;
  let load: Load | undefined;
  const cleanUp = async () => {
    await load?.stop();
    await app?.stop();
    await db.remove();
  };
  process.once('SIGINT', () => void cleanUp().then(() => process.exit(130)));

  try {
    await db.install();
    await db.start();
    const { databaseUrl, shape } = await seededDatabase(db, 'listing_soak', args);
    const token = await createToken('soak', databaseUrl);
    const inspectPort = await freePort();
    app = new AppInstance(
      'soak',
      {
        DATABASE_URL: databaseUrl,
        DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS),
        RATE_LIMIT_PER_MINUTE: '1000000',
      },
      join(folder, 'app.log'),
      [`--inspect=127.0.0.1:${inspectPort}`],
    );
    await app.start();
    const sample = async (baseUrl: string) => {
      // Scrape first: the forced GC's pause then falls in the next period's loop-lag histogram.
      const metrics = await scrape(baseUrl);
      return { ...metrics, liveHeapMiB: await liveHeapMiB(inspectPort) };
    };

    const start = await sample(app.baseUrl);
    say(`app up: RSS ${fixed(start.rssMiB)} MiB, heap used ${fixed(start.heapUsedMiB)} MiB`);
    load = new Load({
      baseUrl: app.baseUrl,
      token,
      concurrency: Number(args.concurrency),
      ratePerSecond: Number(args.rate),
      timeoutMs: STATEMENT_MS + 2000,
      shape,
    });
    const t0 = performance.now();
    load.start();
    const samples: Sample[] = [];
    let seen = 0;
    for (let at = SAMPLE_MS; at <= MINUTES * 60_000 + 1; at += SAMPLE_MS) {
      await sleep(Math.max(0, t0 + at - performance.now()));
      const metrics = await sample(app.baseUrl);
      const window = load.records.slice(seen);
      seen += window.length;
      const summary = summarize(window, STATEMENT_MS + 1000);
      samples.push({
        atMinutes: Math.round(at / 600) / 100,
        ...metrics,
        requests: summary.requests,
        byOutcome: summary.byOutcome,
        p99LatencyMs: summary.p99LatencyMs,
        maxLatencyMs: summary.maxLatencyMs,
      });
      const s = samples.at(-1)!;
      say(
        `${s.atMinutes} min: RSS ${fixed(s.rssMiB)} MiB, heap used ${fixed(s.heapUsedMiB)} MiB ` +
          `(${fixed(s.liveHeapMiB)} after a full GC), ` +
          `loop p99 ${fixed(s.eventLoopP99Ms)} ms; ${s.requests} requests (${formatOutcomes(s.byOutcome)})`,
      );
    }
    await load.stop();
    load = undefined;

    const markdown = render(start, samples);
    writeFileSync(join(folder, 'soak.json'), JSON.stringify({ args, start, samples }, null, 2));
    writeFileSync(join(folder, 'soak.md'), markdown);
    process.stdout.write(`\n${markdown}\n`);
    say(`written to ${folder}/soak.md`);
  } finally {
    await cleanUp();
  }
}

function render(
  start: Omit<Sample, 'atMinutes' | 'requests' | 'byOutcome' | 'p99LatencyMs' | 'maxLatencyMs'>,
  samples: Sample[],
): string {
  const lines = [
    `Soak, ${new Date().toISOString()}: ${MINUTES} min of mixed load at ${args.rate} req/s ` +
      `(${args.concurrency} in flight at most) on one instance, ${args.users} users / ` +
      `${args.activities} login activities on a private MariaDB.`,
    '',
    '| at | RSS MiB | heap used MiB | old space used MiB | heap after full GC MiB | event loop p99 ms | requests in the period | replies | p99 / max ms |',
    '|---|---|---|---|---|---|---|---|---|',
    `| boot, before load | ${fixed(start.rssMiB)} | ${fixed(start.heapUsedMiB)} | ${fixed(start.oldSpaceMiB)} | ${fixed(start.liveHeapMiB)} | ${fixed(start.eventLoopP99Ms)} (start-up) | - | - | - |`,
  ];
  for (const s of samples) {
    lines.push(
      `| ${s.atMinutes} min | ${fixed(s.rssMiB)} | ${fixed(s.heapUsedMiB)} | ${fixed(s.oldSpaceMiB)} | ${fixed(s.liveHeapMiB)} | ${fixed(s.eventLoopP99Ms)} | ${s.requests} | ${formatOutcomes(s.byOutcome)} | ${s.p99LatencyMs} / ${s.maxLatencyMs} |`,
    );
  }
  if (samples.length >= 2) {
    const [first, last] = [samples[0], samples.at(-1)!];
    const rss = growth(first.rssMiB, last.rssMiB);
    const heap = growth(first.heapUsedMiB, last.heapUsedMiB);
    const old = growth(first.oldSpaceMiB, last.oldSpaceMiB);
    const live = growth(first.liveHeapMiB, last.liveHeapMiB);
    const verdict = (n: number) => (n < MAX_GROWTH_PERCENT ? 'under' : 'NOT under');
    lines.push(
      '',
      `Growth after warm-up (the first period), ${first.atMinutes} → ${last.atMinutes} min: ` +
        `RSS ${fixed(rss)}% (${verdict(rss)} ${MAX_GROWTH_PERCENT}%), heap used ${fixed(heap)}% ` +
        `(${verdict(heap)}), old space used ${fixed(old)}% (${verdict(old)}), ` +
        `heap after a full GC ${fixed(live)}% (${verdict(live)}).`,
    );
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
