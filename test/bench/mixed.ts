/**
 * X, the mixed load (`--mixed`, issue 26): autocannon sends a rotation of request paths (plain
 * pages, filtered and sorted pages at several depths, keyset and cursor steps, a scoped token) for
 * 60 s against a server of its own whose totals are fully recounted in the background every 10 s
 * (COUNT_CACHE_FULL_RECOUNT_MS), so that recounts of the big totals run during the load. Reports
 * the replies per status (a 503 is a failure), per path, and the latency percentiles; and the COUNT
 * statements seen running on the database meanwhile (polled from its process list).
 */
import autocannon from 'autocannon';
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import { startServer } from './bench-server';
import type { MatrixTokens } from './matrix';

export interface MixedResult {
  durationSeconds: number;
  connections: number;
  env: Record<string, string>;
  requests: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  max: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  perPath: { name: string; path: string; statuses: Record<string, number> }[];
  /** COUNT statements seen running while the load ran, and the longest of them. */
  counts: { seen: number; overOneSecond: number; longestMs: number };
}

interface MixedRequest {
  name: string;
  path: string;
  token: string;
}

const log = (message: string) => console.log(`[bench] X: ${message}`);

async function fetchPage(
  baseUrl: string,
  path: string,
  token: string,
): Promise<{ pageCount: number; next?: string }> {
  const response = await fetch(`${baseUrl}${path}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (response.status !== 200) {
    throw new Error(`X ${path}: ${response.status} ${await response.text()}`);
  }
  const body = (await response.json()) as { pagination: { page_count: number } };
  const next = /<([^>]*)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  return { pageCount: Number(body.pagination.page_count), next };
}

/** Real values for the filters: a user (of the scoped organization) with failed attempts. */
async function pickUser(
  databaseUrl: string,
  organizationId: number,
): Promise<{ userId: number; q: string; maxActivityId: number }> {
  const connection = await createConnection({ uri: databaseUrl });
  try {
    const [[user]] = await connection.query<RowDataPacket[]>(
      'SELECT id, name FROM users WHERE organization_id = ? ORDER BY id LIMIT 1',
      [organizationId],
    );
    const [[max]] = await connection.query<RowDataPacket[]>(
      'SELECT MAX(id) AS max_id FROM login_activities',
    );
    return {
      userId: Number(user.id),
      q: String(user.name).slice(0, 3),
      maxActivityId: Number(max.max_id),
    };
  } finally {
    await connection.end();
  }
}

export async function requestsFor(
  baseUrl: string,
  databaseUrl: string,
  tokens: MatrixTokens,
): Promise<MixedRequest[]> {
  const { userId, q, maxActivityId } = await pickUser(databaseUrl, tokens.organizationId);
  const since = encodeURIComponent(
    new Date(Math.floor((Date.now() - 30 * 86_400_000) / 1000) * 1000).toISOString(),
  );
  const u = tokens.unscoped;
  const s = tokens.scoped;
  /** `path` at `share` (0..1) of its page count, as the page count of page 1 says. */
  const at = async (path: string, share: number, token = u) => {
    const { pageCount } = await fetchPage(baseUrl, `${path}&page=1`, token);
    return `${path}&page=${Math.max(1, Math.floor(pageCount * share))}`;
  };
  /** The `next` link of `path`'s first page: a cursor step. */
  const nextOf = async (path: string, token = u) => {
    const { next } = await fetchPage(baseUrl, path, token);
    if (!next) throw new Error(`X ${path}: no next link`);
    return next;
  };
  const requests: MixedRequest[] = [
    { name: 'S1', path: '/v1/users?page=1&limit=20', token: u },
    { name: 'S2', path: '/v1/login_activities?page=1&limit=100', token: u },
    {
      name: 'S5',
      path: `/v1/login_activities?success=false&created_from=${since}&sort=-created_at`,
      token: u,
    },
    {
      name: 'failures mid',
      path: await at('/v1/login_activities?success=false&sort=-created_at&limit=20', 0.5),
      token: u,
    },
    {
      name: 'password 10%',
      path: await at('/v1/login_activities?authentication_method=password&limit=20', 0.1),
      token: u,
    },
    {
      name: 'recent 90%',
      path: await at(`/v1/login_activities?created_from=${since}&sort=created_at&limit=20`, 0.9),
      token: u,
    },
    { name: 'users name 90%', path: await at('/v1/users?sort=name&limit=20', 0.9), token: u },
    {
      name: 'users -updated mid',
      path: await at('/v1/users?sort=-updated_at&limit=20', 0.5),
      token: u,
    },
    // q is checked within one organization: under the scoped token.
    { name: 'scoped users q', path: `/v1/users?q=${encodeURIComponent(q)}&sort=name`, token: s },
    {
      name: 'user failures',
      path: `/v1/login_activities?user_id=${userId}&success=false&created_from=${since}&sort=-created_at`,
      token: u,
    },
    {
      name: 'keyset step',
      path: `/v1/login_activities?after_id=${Math.floor(maxActivityId * 0.9)}&limit=20`,
      token: u,
    },
    {
      name: 'cursor -created_at',
      path: await nextOf('/v1/login_activities?sort=-created_at&limit=20'),
      token: u,
    },
    { name: 'cursor users', path: await nextOf('/v1/users?sort=updated_at&limit=100'), token: u },
    { name: 'scoped S1', path: '/v1/users?page=1&limit=20', token: s },
    {
      name: 'scoped -created_at mid',
      path: await at('/v1/login_activities?sort=-created_at&limit=20', 0.5, s),
      token: s,
    },
    { name: 'scoped failures', path: '/v1/login_activities?success=false&page=1', token: s },
    {
      name: 'scoped cursor',
      path: await nextOf('/v1/login_activities?success=false&sort=-created_at&limit=20', s),
      token: s,
    },
  ];
  return requests;
}

/**
 * Polls the database's process list for COUNT statements until `stop()`. The app's statements are
 * prepared: they show as `Execute`, not `Query`.
 */
function watchCounts(databaseUrl: string) {
  const seen = new Map<string, number>();
  let running = true;
  const schema = new URL(databaseUrl).pathname.slice(1);
  const done = (async () => {
    const connection = await createConnection({ uri: databaseUrl });
    try {
      while (running) {
        const [rows] = await connection.query<RowDataPacket[]>(
          `SELECT ID AS id, TIME_MS AS ms, INFO AS info FROM information_schema.PROCESSLIST
            WHERE COMMAND IN ('Query', 'Execute') AND DB = ? AND INFO LIKE '%COUNT(%'
              AND ID <> CONNECTION_ID()`,
          [schema],
        );
        for (const row of rows) {
          // One statement: its connection and when it started (to the 100 ms).
          const key = `${row.id}:${Math.round((Date.now() - Number(row.ms)) / 100)}`;
          seen.set(key, Math.max(seen.get(key) ?? 0, Number(row.ms)));
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await connection.end();
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      // Statements whose start wobbled across a 100 ms boundary between polls count once.
      const byStart = [...seen.entries()].sort(([a], [b]) => a.localeCompare(b));
      const distinct: number[] = [];
      let last = '';
      for (const [key, ms] of byStart) {
        const [id, at] = key.split(':');
        const [lastId, lastAt] = last.split(':');
        if (id === lastId && Math.abs(Number(at) - Number(lastAt)) <= 1) {
          distinct[distinct.length - 1] = Math.max(distinct[distinct.length - 1], ms);
        } else distinct.push(ms);
        last = key;
      }
      return {
        seen: distinct.length,
        overOneSecond: distinct.filter((ms) => ms >= 1000).length,
        longestMs: distinct.length ? Math.max(...distinct) : 0,
      };
    },
  };
}

export async function benchMixed(
  databaseUrl: string,
  tokens: MatrixTokens,
  options: { duration: number; connections: number },
): Promise<MixedResult> {
  const env = { COUNT_CACHE_FULL_RECOUNT_MS: '10000', COUNT_CACHE_TTL_MS: '10000' };
  const server = await startServer(databaseUrl, { extraEnv: env });
  try {
    const requests = await requestsFor(server.baseUrl, databaseUrl, tokens);
    const perPath = requests.map((r) => ({
      name: r.name,
      path: r.path,
      statuses: {} as Record<string, number>,
    }));
    for (const r of perPath) log(`${r.name}: ${r.path}`);
    const watcher = watchCounts(databaseUrl);
    let result: Awaited<ReturnType<typeof autocannon>>;
    let counts: MixedResult['counts'];
    try {
      result = await autocannon({
        url: server.baseUrl,
        connections: options.connections,
        duration: options.duration,
        requests: requests.map((r, i) => ({
          method: 'GET',
          path: r.path,
          headers: { authorization: `Bearer ${r.token}` },
          onResponse: (status: number) => {
            const statuses = perPath[i].statuses;
            statuses[status] = (statuses[status] ?? 0) + 1;
          },
        })),
      });
    } finally {
      // The watcher's connection ends whether the load succeeded or not.
      counts = await watcher.stop();
    }
    const statuses = Object.fromEntries(
      Object.entries(result.statusCodeStats).map(([status, stats]) => [status, stats.count]),
    );
    const mixed: MixedResult = {
      durationSeconds: options.duration,
      connections: options.connections,
      env,
      requests: result.requests.total,
      reqPerSec: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      statuses,
      errors: result.errors,
      timeouts: result.timeouts,
      perPath,
      counts,
    };
    printMixed(mixed);
    return mixed;
  } finally {
    await server.stop();
  }
}

function printMixed(m: MixedResult): void {
  const statuses = Object.entries(m.statuses)
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ');
  console.log(
    `\nX: mixed load, ${m.perPath.length} paths in rotation, ${m.connections} connections × ${m.durationSeconds} s, ` +
      `${Object.entries(m.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
  );
  console.log(
    `X: ${m.requests} requests, ${m.reqPerSec.toFixed(0)} req/s; ${statuses}; ${m.statuses['503'] ?? 0} × 503; ` +
      `errors ${m.errors} (timeouts ${m.timeouts}); p50 ${m.p50} ms, p99 ${m.p99} ms, max ${m.max} ms`,
  );
  console.log(
    `X: COUNT statements seen running: ${m.counts.seen}, ${m.counts.overOneSecond} of them ≥ 1 s, ` +
      `longest ${(m.counts.longestMs / 1000).toFixed(1)} s`,
  );
  for (const p of m.perPath) {
    const line = Object.entries(p.statuses)
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ');
    console.log(`  ${p.name.padEnd(24)} ${line || 'no reply'}`);
  }
}
