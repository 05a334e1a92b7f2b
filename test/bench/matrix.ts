/**
 * M, the filter × sort × depth matrix (`--matrix`, issues 26 and 35): every filter of each listing
 * alone and the pairs consumers send, with every sort, at page 1, the middle page and the page at
 * 90% of page_count (limit 20), then five steps of `next` from page 1, one request at a time. Each request is sent twice in a row: the
 * first time ("cold": the statement and, on page 1, the total not yet asked for) and at once
 * again ("warm": the count cache and the buffer pool as the first left them).
 *
 * Every request must be a 200 within 1 s; a 400 is counted as `refused` (the goal is none).
 */
import { createConnection, type RowDataPacket } from 'mysql2/promise';
import type { RunningServer } from './bench-server';

export interface MatrixTokens {
  unscoped: string;
  /** A token limited to `organizationId`. */
  scoped: string;
  organizationId: number;
}

export type Depth = 'first' | 'middle' | '90%' | 'next';

export interface MatrixRow {
  token: 'unscoped' | 'scoped';
  listing: string;
  /** The filters, without sort and page. */
  filters: string;
  sort: string;
  depth: Depth;
  page: number;
  pageCount?: number;
  statusCold: number;
  statusWarm: number;
  msCold: number;
  msWarm: number;
  outcome: 'ok' | 'slow' | 'refused' | '503' | 'other';
  /** Asked once more after the whole matrix and a pause: totals and histograms counted. */
  statusSettled?: number;
  msSettled?: number;
  /** A refusal's or an error's detail and parameter messages. */
  detail?: string;
  /** The request itself, where it is a `next` link rather than a page number. */
  path?: string;
  /** Index entries and rows the server read for it (the slowest page 1s only). */
  handlerReads?: number;
}

export interface MatrixSummary {
  /** The settled pass: each request that was not refused, once more. */
  settled?: { okWithin1s: number; over1s: number; serviceUnavailable: number; other: number };
  requests: number;
  refused: number;
  okWithin1s: number;
  over1s: number;
  serviceUnavailable: number;
  other: Record<string, number>;
  /** The server's peak RSS once the matrix was done (the scenarios run before it included). */
  peakRssMiB?: number;
}

const LIMIT = 20;
const SLOW_MS = 1000;
/** A request still unanswered after this long is given up on (and counted as status 0). */
const TIMEOUT_MS = 30_000;

interface Listing {
  path: string;
  sorts: string[];
  filterSets: string[];
}

/** Realistic filter values, read from the data itself. */
async function pickValues(databaseUrl: string, organizationId: number) {
  const connection = await createConnection({ uri: databaseUrl });
  try {
    // A successful attempt of a user of the scoped organization, in the middle of the log: its
    // user, e-mail, ip and session exist under both tokens.
    const [[maxRow]] = await connection.query<RowDataPacket[]>(
      'SELECT MAX(id) AS max_id FROM login_activities',
    );
    const [[activity]] = await connection.query<RowDataPacket[]>(
      `SELECT user_id, user_email, ip_address, session_id FROM login_activities
        WHERE organization_id = ? AND session_id IS NOT NULL AND id >= ? ORDER BY id LIMIT 1`,
      [organizationId, Math.floor(Number(maxRow.max_id) / 2)],
    );
    const [[user]] = await connection.query<RowDataPacket[]>(
      'SELECT id, name, email, role_id, organization_id FROM users WHERE id = ?',
      [activity.user_id],
    );
    return {
      userId: Number(user.id),
      email: String(user.email),
      roleId: Number(user.role_id),
      organizationId: Number(user.organization_id),
      /** The first three characters of a real name. */
      q: String(user.name).slice(0, 3),
      activityEmail: String(activity.user_email),
      ip: String(activity.ip_address),
      session: String(activity.session_id),
    };
  } finally {
    await connection.end();
  }
}

/** The organization of a user in the middle of the table: the scoped token's. */
export async function pickOrganization(databaseUrl: string): Promise<number> {
  const connection = await createConnection({ uri: databaseUrl });
  try {
    const [[row]] = await connection.query<RowDataPacket[]>(
      `SELECT organization_id FROM users WHERE id >= (SELECT (MIN(id) + MAX(id)) DIV 2 FROM users)
        ORDER BY id LIMIT 1`,
    );
    return Number(row.organization_id);
  } finally {
    await connection.end();
  }
}

const withSort = (sorts: string[]) => sorts.flatMap((sort) => [sort, `-${sort}`]);

async function listings(databaseUrl: string, organizationId: number): Promise<Listing[]> {
  const v = await pickValues(databaseUrl, organizationId);
  // Whole seconds, so that the URLs are the same throughout the run.
  const thirtyDaysAgo = encodeURIComponent(
    new Date(Math.floor((Date.now() - 30 * 86_400_000) / 1000) * 1000).toISOString(),
  );
  return [
    {
      path: '/v1/users',
      sorts: withSort(['id', 'created_at', 'updated_at', 'name', 'email']),
      // The README's combined example, `q=<a real name's start>&sort=name`, is q's row with sort=name.
      filterSets: [
        '',
        `organization_id=${v.organizationId}`,
        `role_id=${v.roleId}`,
        `email=${encodeURIComponent(v.email)}`,
        `q=${encodeURIComponent(v.q)}`,
        `created_from=${thirtyDaysAgo}`,
        `created_to=${thirtyDaysAgo}`,
        `updated_from=${thirtyDaysAgo}`,
        `updated_to=${thirtyDaysAgo}`,
      ],
    },
    {
      path: '/v1/login_activities',
      sorts: withSort(['id', 'created_at']),
      filterSets: [
        '',
        `user_id=${v.userId}`,
        `user_email=${encodeURIComponent(v.activityEmail)}`,
        'success=false',
        'authentication_method=password',
        'oauth_provider=google',
        'failure_reason=invalid_credentials',
        `ip_address=${encodeURIComponent(v.ip)}`,
        `session_id=${encodeURIComponent(v.session)}`,
        'otp_required=true',
        `created_from=${thirtyDaysAgo}`,
        `created_to=${thirtyDaysAgo}`,
        `user_id=${v.userId}&success=false&created_from=${thirtyDaysAgo}`,
        // Pairs of filters of many rows each, and the last month's failures.
        'success=false&otp_required=true',
        'authentication_method=password&success=false',
        'authentication_method=oauth&oauth_provider=google',
        `success=false&created_from=${thirtyDaysAgo}`,
      ],
    },
  ];
}

export interface Reply {
  status: number;
  ms: number;
  pageCount?: number;
  /** The page's ids, in order. */
  ids?: number[];
  detail?: string;
  /** The `next` link's target. */
  next?: string;
}

export async function timedGet(server: RunningServer, path: string, token: string): Promise<Reply> {
  const started = performance.now();
  try {
    const response = await fetch(`${server.baseUrl}${path}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const text = await response.text();
    const ms = performance.now() - started;
    if (response.status === 200) {
      const body = JSON.parse(text) as {
        data: { id: number }[];
        pagination: { page_count: number };
      };
      const next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
      const ids = body.data.map((row) => row.id);
      return { status: 200, ms, pageCount: Number(body.pagination.page_count), ids, next };
    }
    let detail = text.slice(0, 300);
    try {
      const problem = JSON.parse(text) as {
        detail?: string;
        errors?: { parameter: string; message: string }[];
      };
      detail = [
        problem.detail,
        ...(problem.errors ?? []).map((e) => `${e.parameter}: ${e.message}`),
      ]
        .filter(Boolean)
        .join('; ');
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, ms, detail };
  } catch (error) {
    return { status: 0, ms: performance.now() - started, detail: String(error) };
  }
}

function outcomeOf(cold: Reply, warm: Reply): MatrixRow['outcome'] {
  // A well-formed request answered 400: refused (the goal is none).
  if (cold.status === 400 || warm.status === 400) return 'refused';
  if (cold.status === 503 || warm.status === 503) return '503';
  if (cold.status !== 200 || warm.status !== 200) return 'other';
  return Math.max(cold.ms, warm.ms) > SLOW_MS ? 'slow' : 'ok';
}

/** Runs the matrix: the whole of it under the unscoped token, a subset under the scoped one. */
export async function benchMatrix(
  server: RunningServer,
  databaseUrl: string,
  tokens: MatrixTokens,
): Promise<{ rows: MatrixRow[]; summary: MatrixSummary }> {
  const rows: MatrixRow[] = [];
  // `BENCH_MATRIX_LISTINGS=users` runs one listing's part alone (while working on its plans).
  const only = process.env.BENCH_MATRIX_LISTINGS?.split(',').map((name) => `/v1/${name}`);
  const all = (await listings(databaseUrl, tokens.organizationId)).filter(
    (listing) => !only || only.includes(listing.path),
  );
  const runs: { token: MatrixRow['token']; listing: Listing }[] = [
    ...all.map((listing) => ({ token: 'unscoped' as const, listing })),
    // The scoped subset: every filter set, in the default order and newest first.
    ...all.map((listing) => ({
      token: 'scoped' as const,
      listing: {
        ...listing,
        // organization_id is the scope itself under this token.
        filterSets: listing.filterSets.filter((f) => !f.startsWith('organization_id=')),
        sorts: ['id', '-created_at'],
      },
    })),
  ];
  for (const { token, listing } of runs) {
    const secret = token === 'scoped' ? tokens.scoped : tokens.unscoped;
    for (const filters of listing.filterSets) {
      for (const sort of listing.sorts) {
        const query = (page: number) =>
          `${listing.path}?${filters ? `${filters}&` : ''}sort=${sort}&page=${page}&limit=${LIMIT}`;
        let pageCount: number | undefined;
        let firstNext: string | undefined;
        for (const depth of ['first', 'middle', '90%'] as const) {
          const page =
            depth === 'first'
              ? 1
              : Math.max(
                  1,
                  depth === 'middle' ? Math.ceil(pageCount! / 2) : Math.floor(pageCount! * 0.9),
                );
          const cold = await timedGet(server, query(page), secret);
          const warm = await timedGet(server, query(page), secret);
          if (depth === 'first') pageCount = cold.pageCount ?? warm.pageCount;
          const row: MatrixRow = {
            token,
            listing: listing.path,
            filters: filters || '(none)',
            sort,
            depth,
            page,
            pageCount,
            statusCold: cold.status,
            statusWarm: warm.status,
            msCold: Math.round(cold.ms * 10) / 10,
            msWarm: Math.round(warm.ms * 10) / 10,
            outcome: outcomeOf(cold, warm),
            detail: cold.detail ?? warm.detail,
          };
          rows.push(row);
          console.log(`[bench] M ${formatRow(row).join('  ')}`);
          // A refusal or a failure on page 1 leaves no page_count to go deeper with.
          if (pageCount === undefined) break;
          if (depth === 'first') firstNext = cold.next ?? warm.next;
        }
        // Five steps of `next` from page 1, each asked once.
        let next = firstNext;
        for (let step = 2; step <= 6 && next; step++) {
          const path = new URL(next, server.baseUrl);
          const reply = await timedGet(server, `${path.pathname}${path.search}`, secret);
          const row: MatrixRow = {
            token,
            listing: listing.path,
            filters: filters || '(none)',
            sort,
            depth: 'next',
            page: step,
            pageCount,
            statusCold: reply.status,
            statusWarm: reply.status,
            msCold: Math.round(reply.ms * 10) / 10,
            msWarm: Math.round(reply.ms * 10) / 10,
            outcome: outcomeOf(reply, reply),
            detail: reply.detail,
            path: `${path.pathname}${path.search}`,
          };
          rows.push(row);
          console.log(`[bench] M ${formatRow(row).join('  ')}`);
          next = reply.next;
        }
      }
    }
  }
  // The settled pass: what a consumer sees once the totals and the deep pages' histograms, counted
  // in the background by the passes above, are there (they are then only advanced).
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  for (const row of rows.filter((r) => r.outcome !== 'refused')) {
    const secret = row.token === 'scoped' ? tokens.scoped : tokens.unscoped;
    const filters = row.filters === '(none)' ? '' : `${row.filters}&`;
    const settled = await timedGet(
      server,
      row.path ?? `${row.listing}?${filters}sort=${row.sort}&page=${row.page}&limit=${LIMIT}`,
      secret,
    );
    row.statusSettled = settled.status;
    row.msSettled = Math.round(settled.ms * 10) / 10;
  }
  const summary = summarize(rows);
  printMatrix(rows, summary);
  // The page 1s slowest once settled: the index entries and rows their statements read.
  const worst = rows
    .filter((r) => r.depth === 'first' && r.statusSettled === 200)
    .sort((a, b) => b.msSettled! - a.msSettled!)
    .slice(0, WORST_PAGES);
  console.log(`\nM index entries read (least of ${READ_TRIES}) by the slowest page 1s:`);
  for (const row of worst) {
    const secret = row.token === 'scoped' ? tokens.scoped : tokens.unscoped;
    const filters = row.filters === '(none)' ? '' : `${row.filters}&`;
    const path = `${row.listing}?${filters}sort=${row.sort}&page=1&limit=${LIMIT}`;
    row.handlerReads = await handlerReads(server, databaseUrl, path, secret);
    console.log(`  ${formatRow(row).join('  ')}  — ${row.handlerReads} entries read`);
  }
  return { rows, summary };
}

const WORST_PAGES = 5;
const READ_TRIES = 3;

/**
 * The index entries (and rows, through the primary key) the server read for one request, the
 * least of READ_TRIES with the total then cached: on MariaDB the bench database's own indexes'
 * `ROWS_READ` (INDEX_STATISTICS, with `userstat` on), which other databases' traffic does not
 * touch; elsewhere the server's global Handler_read_* counters, less what reading them costs.
 */
async function handlerReads(
  server: RunningServer,
  databaseUrl: string,
  path: string,
  token: string,
): Promise<number> {
  const connection = await createConnection({ uri: databaseUrl });
  try {
    const [[{ version }]] = await connection.query<RowDataPacket[]>('SELECT VERSION() AS version');
    const perIndex = /mariadb/i.test(String(version));
    if (perIndex) await connection.query('SET GLOBAL userstat = 1');
    const reads = async () => {
      const [status] = perIndex
        ? await connection.query<RowDataPacket[]>(
            'SELECT ROWS_READ AS Value FROM information_schema.INDEX_STATISTICS WHERE TABLE_SCHEMA = DATABASE()',
          )
        : await connection.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Handler_read%'");
      return status.reduce((sum, row) => sum + Number(row.Value), 0);
    };
    let least = Number.POSITIVE_INFINITY;
    for (let i = 0; i < READ_TRIES; i++) {
      const start = await reads();
      const own = (await reads()) - start;
      const before = await reads();
      await timedGet(server, path, token);
      least = Math.min(least, (await reads()) - before - own);
    }
    return least;
  } finally {
    await connection.end();
  }
}

/** The pause before the settled pass (`BENCH_MATRIX_SETTLE_MS`, default 60 s). */
const SETTLE_MS = Number(process.env.BENCH_MATRIX_SETTLE_MS ?? 60_000);

function summarize(rows: MatrixRow[]): MatrixSummary {
  const other: Record<string, number> = {};
  for (const row of rows.filter((r) => r.outcome === 'other')) {
    const key = `${row.statusCold}/${row.statusWarm}`;
    other[key] = (other[key] ?? 0) + 1;
  }
  const count = (outcome: MatrixRow['outcome']) => rows.filter((r) => r.outcome === outcome).length;
  const asked = rows.filter((r) => r.statusSettled !== undefined);
  const settled = {
    okWithin1s: asked.filter((r) => r.statusSettled === 200 && r.msSettled! <= SLOW_MS).length,
    over1s: asked.filter((r) => r.statusSettled === 200 && r.msSettled! > SLOW_MS).length,
    serviceUnavailable: asked.filter((r) => r.statusSettled === 503).length,
    other: asked.filter((r) => r.statusSettled !== 200 && r.statusSettled !== 503).length,
  };
  return {
    settled,
    requests: rows.length,
    refused: count('refused'),
    okWithin1s: count('ok'),
    over1s: count('slow'),
    serviceUnavailable: count('503'),
    other,
  };
}

const formatRow = (row: MatrixRow): string[] => [
  row.token,
  row.listing,
  `${row.filters === '(none)' ? '' : `${decodeURIComponent(row.filters)}&`}sort=${row.sort}`,
  `${row.depth} (${row.page}/${row.pageCount ?? '?'})`,
  row.statusCold === row.statusWarm
    ? String(row.statusCold)
    : `${row.statusCold}/${row.statusWarm}`,
  row.msCold.toFixed(0),
  row.msWarm.toFixed(0),
  row.msSettled === undefined
    ? ''
    : `${row.msSettled.toFixed(0)}${row.statusSettled === 200 ? '' : ` (${row.statusSettled})`}`,
];

export function summaryLine(summary: MatrixSummary): string {
  const other = Object.entries(summary.other);
  return (
    `${summary.requests} requests (each sent twice), ${summary.refused} refused (400), ` +
    `${summary.okWithin1s} 200 ≤ 1 s, ${summary.over1s} over 1 s, ${summary.serviceUnavailable} 503, ` +
    `other statuses (cold/warm): ${other.length ? other.map(([s, n]) => `${n} × ${s}`).join(', ') : 'none'}` +
    (summary.settled
      ? `; settled pass: ${summary.settled.okWithin1s} 200 ≤ 1 s, ${summary.settled.over1s} over 1 s, ` +
        `${summary.settled.serviceUnavailable} 503, ${summary.settled.other} other`
      : '') +
    (summary.peakRssMiB !== undefined
      ? `; server peak RSS ${summary.peakRssMiB.toFixed(0)} MiB`
      : '')
  );
}

function printMatrix(rows: MatrixRow[], summary: MatrixSummary): void {
  const header = [
    'token',
    'listing',
    'params',
    'depth (page/pages)',
    'status',
    'ms cold',
    'ms warm',
    'ms settled',
  ];
  const lines = rows.map(formatRow);
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((l) => l[i].length)));
  const format = (cells: string[]) =>
    `| ${cells.map((cell, i) => (i >= 4 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join(' | ')} |`;
  console.log('\nM: filter × sort × depth, limit 20, one request at a time, each twice');
  console.log(format(header));
  console.log(
    `|${widths.map((w, i) => (i >= 4 ? `${'-'.repeat(w + 1)}:` : `:${'-'.repeat(w + 1)}`)).join('|')}|`,
  );
  for (const line of lines) console.log(format(line));
  console.log(`M summary: ${summaryLine(summary)}`);
  for (const outcome of ['slow', '503', 'other', 'refused'] as const) {
    const listed = rows.filter((r) => r.outcome === outcome);
    if (!listed.length) continue;
    console.log(`M ${outcome === 'slow' ? 'over 1 s' : outcome}:`);
    for (const row of listed) {
      console.log(`  ${formatRow(row).join('  ')}${row.detail ? `  — ${row.detail}` : ''}`);
    }
  }
  const unsettled = rows.filter(
    (r) => r.statusSettled !== undefined && (r.statusSettled !== 200 || r.msSettled! > SLOW_MS),
  );
  if (unsettled.length) console.log('M settled pass, over 1 s or not 200:');
  for (const row of unsettled) console.log(`  ${formatRow(row).join('  ')}`);
}
