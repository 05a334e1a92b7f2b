/**
 * P, the random probe (`--probe`): requests a consumer might send that the matrix does not list,
 * drawn from a seeded generator (`BENCH_PROBE_SEED`, `BENCH_PROBE_CASES`), each page compared
 * with the database's own `ORDER BY … LIMIT … OFFSET`. A case is 0-3 filters of one listing with
 * realistic values (keyset bounds and windows among them), a sort, a limit and a token; page 1,
 * one more page at random depth, three steps of `next`, and sometimes page_count against a COUNT.
 * A database comparison that runs past BENCH_PROBE_DB_LIMIT_S (30 s) is left out, and counted.
 * With BENCH_PROBE_APPEND=N, every N cases append login activities and users, as a live platform
 * does: rows must stay exact, so page_count (which may lag by the TTL) is then not compared.
 * BENCH_PROBE_UPDATE=1 also changes a few users each time. BENCH_PROBE_LATE=1 also inserts a login
 * activity and a user on a second connection that commits LATE_COMMIT_MS after the rows appended
 * after them, with higher ids, as two writers' inserts may be, once the service has counted those.
 */
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import type { RunningServer } from './bench-server';
import { ACTIVITY_COLUMNS } from '../../src/database/seed/demo-data';
import { timedGet, type MatrixTokens } from './matrix';

export interface ProbeResult {
  cases: number;
  requests: number;
  compared: number;
  /** Comparisons the database could not answer within its limit. */
  uncompared: number;
  /** Requests answered after more than 1 s, and their paths. */
  slow: { ms: number; path: string }[];
  p50: number;
  p99: number;
  /** Replies that were not 200, rows unlike the database's, page counts unlike its count. */
  problems: string[];
}

const SLOW_MS = 1000;
const DAY_MS = 86_400_000;
/** How long ago a window starts or ends; negative: ahead, a window still open (rows land in it). */
const AGO_MS = [-1_800_000, 3_600_000, DAY_MS, 7 * DAY_MS, 30 * DAY_MS, 180 * DAY_MS, 400 * DAY_MS];

type Filter = () => { value: string; sql: string; args: unknown[] };

interface ProbedListing {
  table: string;
  sorts: string[];
  filters: Record<string, Filter>;
}

export async function benchProbe(
  server: RunningServer,
  databaseUrl: string,
  tokens: MatrixTokens,
): Promise<ProbeResult> {
  const cases = Number(process.env.BENCH_PROBE_CASES ?? 100);
  const limitS = Number(process.env.BENCH_PROBE_DB_LIMIT_S ?? 30);
  const appendEvery = Number(process.env.BENCH_PROBE_APPEND ?? 0);
  const updating = process.env.BENCH_PROBE_UPDATE === '1';
  let seed = Number(process.env.BENCH_PROBE_SEED ?? 1);
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];

  const db = await createConnection({ uri: databaseUrl, dateStrings: true });
  const late: LateWriter | undefined =
    process.env.BENCH_PROBE_LATE === '1'
      ? { connection: await createConnection({ uri: databaseUrl, dateStrings: true }) }
      : undefined;
  // Copying rows is then a plain read, not a locking one that would wait for the open insert.
  if (late) await db.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  const query = async (sql: string, args: unknown[] = []) =>
    (await db.query<RowDataPacket[]>(sql, args))[0];
  try {
    const listings = await probedListings(query, random, pick);
    const result: ProbeResult = {
      cases,
      requests: 0,
      compared: 0,
      uncompared: 0,
      slow: [],
      p50: 0,
      p99: 0,
      problems: [],
    };
    const times: number[] = [];
    const get = async (path: string, token: string) => {
      const reply = await timedGet(server, path, token);
      times.push(reply.ms);
      result.requests++;
      if (reply.ms > SLOW_MS) result.slow.push({ ms: Math.round(reply.ms), path });
      if (reply.status !== 200) {
        result.problems.push(`${reply.status} ${path}: ${reply.detail}`);
        return undefined;
      }
      return { ids: reply.ids!, pageCount: reply.pageCount!, next: reply.next };
    };

    // Pages past the end count the rows appended since their total: the service sees the new ids.
    const seeHighestIds = async () => {
      for (const path of [
        '/v1/login_activities',
        '/v1/login_activities?success=true',
        '/v1/users',
      ]) {
        await timedGet(
          server,
          `${path}${path.includes('?') ? '&' : '?'}page=100000000`,
          tokens.unscoped,
        );
      }
    };
    for (let i = 0; i < cases; i++) {
      if (appendEvery > 0 && i > 0 && i % appendEvery === 0)
        await append(query, random, updating, late && { ...late, seen: seeHighestIds });
      const listing = random() < 0.5 ? listings.users : listings.activities;
      const chosen = new Set<string>();
      const wanted = Math.floor(random() * 4);
      while (chosen.size < wanted) chosen.add(pick(Object.keys(listing.filters)));
      const scoped = random() < 0.3;
      const params = new URLSearchParams();
      const where: string[] = [];
      const args: unknown[] = [];
      for (const name of chosen) {
        const filter = listing.filters[name]();
        params.set(name, filter.value);
        where.push(filter.sql);
        args.push(...filter.args);
      }
      if (scoped) {
        where.push('t.organization_id = ?');
        args.push(tokens.organizationId);
      }
      const column = pick(listing.sorts);
      const direction = random() < 0.5 ? 'DESC' : 'ASC';
      params.set('sort', `${direction === 'DESC' ? '-' : ''}${column}`);
      const limit = pick([1, 7, 20, 100]);
      params.set('limit', String(limit));
      const order =
        column === 'id' ? `t.id ${direction}` : `t.${column} ${direction}, t.id ${direction}`;
      const whereSql = where.length ? ` WHERE ${where.join(' AND ')}` : '';
      const token = scoped ? tokens.scoped : tokens.unscoped;
      const path = `/v1/${listing.table}?${params}`;

      const compare = async (label: string, page: number, ids: number[]) => {
        try {
          const rows = await query(
            `SET STATEMENT max_statement_time=${limitS} FOR SELECT t.id FROM ${listing.table} t${whereSql} ORDER BY ${order} LIMIT ${limit} OFFSET ${(page - 1) * limit}`,
            args,
          );
          result.compared++;
          const expected = rows.map((row) => Number(row.id));
          if (JSON.stringify(ids) !== JSON.stringify(expected)) {
            result.problems.push(`rows ${label}: ${ids.slice(0, 4)}… not ${expected.slice(0, 4)}…`);
          }
        } catch (error) {
          if (!/max_statement_time|interrupted/i.test(String(error))) throw error;
          result.uncompared++;
        }
      };

      const first = await get(path, token);
      if (!first) continue;
      await compare(path, 1, first.ids);
      if (!appendEvery && random() < 0.3) {
        const [{ n }] = await query(
          `SET STATEMENT max_statement_time=${limitS} FOR SELECT COUNT(*) AS n FROM ${listing.table} t${whereSql}`,
          args,
        ).catch(() => [{ n: undefined }]);
        if (n !== undefined && Math.ceil(Number(n) / limit) !== first.pageCount) {
          result.problems.push(
            `page_count ${path}: ${first.pageCount}, not ${Math.ceil(Number(n) / limit)}`,
          );
        }
      }
      if (first.pageCount > 1) {
        const count = first.pageCount;
        const page = pick([
          2,
          Math.ceil(count / 2),
          Math.ceil(count * 0.9),
          count,
          1 + Math.floor(random() * count),
        ]);
        const deeper = await get(`${path}&page=${page}`, token);
        if (deeper) await compare(`${path}&page=${page}`, page, deeper.ids);
      }
      let next = first.next;
      for (let step = 2; step <= 4 && next; step++) {
        const target = new URL(next, server.baseUrl);
        const reply = await get(`${target.pathname}${target.search}`, token);
        if (!reply) break;
        await compare(`${path} step ${step}`, step, reply.ids);
        next = reply.next;
      }
    }
    times.sort((a, b) => a - b);
    result.p50 = Math.round(times[Math.floor(times.length / 2)] ?? 0);
    result.p99 = Math.round(times[Math.floor(times.length * 0.99)] ?? 0);
    return result;
  } finally {
    await late?.connection.end();
    await db.end();
  }
}

export const probeSummary = (probe: ProbeResult): string =>
  `${probe.cases} cases, ${probe.requests} requests, ${probe.compared} pages compared with the ` +
  `database (${probe.uncompared} left out), ${probe.problems.length} problems, ${probe.slow.length} over 1 s; ` +
  `p50 ${probe.p50} ms, p99 ${probe.p99} ms`;

/** Just past TAIL_HOLDBACK_MS (5 s), which keeps newer rows out of ascending id walks. */
const CREATED = 'UTC_TIMESTAMP() - INTERVAL 6 SECOND';
/** TAIL_HOLDBACK_MS, the tail watch's second and a margin: appended ids are served by then. */
const HOLDBACK_WAIT_MS = 6_500;

/**
 * Appends copies of a few existing login activities and users, created now: the rows a live
 * platform adds between two requests of a walk.
 */
async function append(
  query: (sql: string, args?: unknown[]) => Promise<RowDataPacket[]>,
  random: () => number,
  updating: boolean,
  late?: LateWriter,
): Promise<void> {
  const rows = 1 + Math.floor(random() * 50);
  const [{ maxActivity, maxUser }] = await query(
    'SELECT (SELECT MAX(id) FROM login_activities) AS maxActivity, (SELECT MAX(id) FROM users) AS maxUser',
  );
  if (late)
    await insertLate(query, late, random() * Number(maxActivity), random() * Number(maxUser));
  const copied = ACTIVITY_COLUMNS.map((column) => (column === 'created_at' ? CREATED : column));
  // A bounded stretch of ids: copying from `id >= N` into the same table read all of it at 50M.
  const activityFrom = Math.floor(random() * Number(maxActivity));
  const userFrom = Math.floor(random() * Number(maxUser));
  await query(
    `INSERT INTO login_activities (${ACTIVITY_COLUMNS.join(', ')})
     SELECT ${copied.join(', ')} FROM login_activities WHERE id BETWEEN ? AND ? + 1000
      ORDER BY id LIMIT ${rows}`,
    [activityFrom, activityFrom],
  );
  await query(
    `INSERT INTO users (name, email, role_id, organization_id, created_at, updated_at)
     SELECT name, CONCAT('probe', ?, '.', id, '.', email), role_id, organization_id,
            ${CREATED}, ${CREATED}
       FROM users WHERE id BETWEEN ? AND ? + 1000 ORDER BY id LIMIT ${Math.ceil(rows / 10)}`,
    [Date.now(), userFrom, userFrom],
  );
  if (late) {
    // The service counts past the rows just appended, then the late ones commit: between two cases,
    // so that no case compares a walk with the database while rows land.
    await late.seen?.();
    await new Promise((resolve) => setTimeout(resolve, LATE_COMMIT_MS));
    await late.connection.query('COMMIT');
  }
  // An ascending id walk holds new ids back until the service has seen them TAIL_HOLDBACK_MS
  // (5 s) before, however old their created_at; it reads the highest id every second.
  await new Promise((resolve) => setTimeout(resolve, HOLDBACK_WAIT_MS));
  if (!updating) return;
  // And updates a few users' role and name (deep pages positioned by a histogram may shift).
  const [{ roles }] = await query('SELECT COUNT(*) AS roles FROM roles');
  await query(
    `UPDATE users SET role_id = 1 + (id % ?), name = CONCAT(SUBSTRING(name, 2), LEFT(name, 1)),
            updated_at = ${CREATED}
      WHERE id >= ? ORDER BY id LIMIT 3`,
    [Number(roles), Math.floor(random() * Number(maxUser))],
  );
}

/** A second writer, whose inserts commit after the next ones of the first. */
interface LateWriter {
  connection: Connection;
  /** Makes the service count the rows appended (and see their ids) before the late ones commit. */
  seen?: () => Promise<void>;
}

/** Within TAIL_HOLDBACK_MS (5 s): the late commits the service allows for. */
const LATE_COMMIT_MS = 1000;

/**
 * Opens a transaction that inserts a copy of a login activity and of a user, created now: their
 * ids lie below the rows appended after them, committed first.
 */
async function insertLate(
  query: (sql: string, args?: unknown[]) => Promise<RowDataPacket[]>,
  { connection: late }: LateWriter,
  activityFrom: number,
  userFrom: number,
): Promise<void> {
  const [activity] = await query(
    `SELECT ${ACTIVITY_COLUMNS.join(', ')} FROM login_activities WHERE id >= ? ORDER BY id LIMIT 1`,
    [Math.floor(activityFrom)],
  );
  const [user] = await query(
    'SELECT name, email, role_id, organization_id FROM users WHERE id >= ? ORDER BY id LIMIT 1',
    [Math.floor(userFrom)],
  );
  await late.query('START TRANSACTION');
  const values = ACTIVITY_COLUMNS.map((column) => (column === 'created_at' ? CREATED : '?'));
  await late.query(
    `INSERT INTO login_activities (${ACTIVITY_COLUMNS.join(', ')}) VALUES (${values.join(', ')})`,
    ACTIVITY_COLUMNS.filter((column) => column !== 'created_at').map((column) => activity[column]),
  );
  await late.query(
    `INSERT INTO users (name, email, role_id, organization_id, created_at, updated_at)
     VALUES (?, ?, ?, ?, ${CREATED}, ${CREATED})`,
    [user.name, `late${Date.now()}.${user.email}`, user.role_id, user.organization_id],
  );
}

/** The filters of each listing, with values read from the data itself. */
async function probedListings(
  query: (sql: string, args?: unknown[]) => Promise<RowDataPacket[]>,
  random: () => number,
  pick: <T>(items: readonly T[]) => T,
): Promise<{ users: ProbedListing; activities: ProbedListing }> {
  const [{ maxActivity }] = await query('SELECT MAX(id) AS maxActivity FROM login_activities');
  const [{ maxUser }] = await query('SELECT MAX(id) AS maxUser FROM users');
  const activities: RowDataPacket[] = [];
  const users: RowDataPacket[] = [];
  for (let i = 0; i < 20; i++) {
    const [activity] = await query(
      `SELECT user_id, user_email, ip_address, session_id FROM login_activities
        WHERE id >= ? AND user_id IS NOT NULL AND session_id IS NOT NULL ORDER BY id LIMIT 1`,
      [Math.floor(random() * Number(maxActivity))],
    );
    const [user] = await query(
      'SELECT name, email, role_id, organization_id FROM users WHERE id >= ? ORDER BY id LIMIT 1',
      [Math.floor(random() * Number(maxUser))],
    );
    if (activity) activities.push(activity);
    if (user) users.push(user);
  }
  const equals =
    (column: string, values: () => unknown): Filter =>
    () => {
      const value = values();
      return { value: String(value), sql: `t.${column} = ?`, args: [value] };
    };
  const flag =
    (column: string): Filter =>
    () => {
      const value = random() < 0.5;
      return { value: String(value), sql: `t.${column} = ?`, args: [value ? 1 : 0] };
    };
  const time =
    (column: string, operator: '>=' | '<'): Filter =>
    () => {
      const at = new Date(Math.floor((Date.now() - pick(AGO_MS)) / 1000) * 1000);
      const sql = at.toISOString().replace('T', ' ').replace('Z', '');
      return { value: at.toISOString(), sql: `t.${column} ${operator} ?`, args: [sql] };
    };
  const keyset =
    (max: number, operator: '>' | '<'): Filter =>
    () => {
      const id = Math.floor(random() * max);
      return { value: String(id), sql: `t.id ${operator} ?`, args: [id] };
    };
  return {
    users: {
      table: 'users',
      sorts: ['id', 'created_at', 'updated_at', 'name', 'email'],
      filters: {
        organization_id: equals('organization_id', () => pick(users).organization_id),
        role_id: equals('role_id', () => pick(users).role_id),
        email: equals('email', () => pick(users).email),
        q: () => {
          const user = pick(users);
          const text = String(random() < 0.5 ? user.name : user.email);
          const value = text.slice(0, 2 + Math.floor(random() * 3));
          const like = `${value.replace(/[!%_]/g, (c) => `!${c}`)}%`;
          return {
            value,
            sql: "(t.name LIKE ? ESCAPE '!' OR t.email LIKE ? ESCAPE '!')",
            args: [like, like],
          };
        },
        created_from: time('created_at', '>='),
        created_to: time('created_at', '<'),
        updated_from: time('updated_at', '>='),
        updated_to: time('updated_at', '<'),
        after_id: keyset(Number(maxUser), '>'),
        before_id: keyset(Number(maxUser), '<'),
      },
    },
    activities: {
      table: 'login_activities',
      sorts: ['id', 'created_at'],
      filters: {
        user_id: equals('user_id', () => pick(activities).user_id),
        user_email: equals('user_email', () => pick(activities).user_email),
        success: flag('success'),
        authentication_method: equals('authentication_method', () =>
          pick(['password', 'oauth', 'saml', 'magic_link', 'passkey']),
        ),
        oauth_provider: equals('oauth_provider', () =>
          pick(['google', 'microsoft', 'github', 'okta', 'apple']),
        ),
        failure_reason: equals('failure_reason', () =>
          pick(['invalid_credentials', 'unknown_user', 'account_locked', 'otp_invalid']),
        ),
        ip_address: equals('ip_address', () => pick(activities).ip_address),
        session_id: equals('session_id', () => pick(activities).session_id),
        otp_required: flag('otp_required'),
        created_from: time('created_at', '>='),
        created_to: time('created_at', '<'),
        after_id: keyset(Number(maxActivity), '>'),
        before_id: keyset(Number(maxActivity), '<'),
      },
    },
  };
}
