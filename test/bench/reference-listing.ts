/**
 * The listing logic of the yardstick servers (issue 5): the least a correct listing can do. The
 * bearer token is checked (by its hash, remembered for the run), the page is one statement,
 * totals are kept for 5 s. No validation, logging, metrics, rate limits or ETags. Mounted as is
 * in node:http (reference-server.ts) and in a bare NestJS app (reference-nest-server.ts), so the
 * two differ only in the framework around it.
 */
import { createHash } from 'node:crypto';
import { createPool, type RowDataPacket } from 'mysql2/promise';

export const pool = createPool({
  uri: process.env.DATABASE_URL,
  connectionLimit: 10,
  dateStrings: false,
});

const COLUMNS: Record<string, string> = {
  users:
    'u.id, u.name, u.email, u.role_id, r.name AS role_name, u.organization_id, ' +
    'o.name AS organization_name, u.created_at, u.updated_at',
  login_activities:
    'a.id, a.user_email, a.authentication_method, a.oauth_provider, a.ip_address, a.otp_required, ' +
    'a.success, a.failure_reason, a.user_agent, a.created_at, a.user_id, a.session_id',
};
const FROM: Record<string, string> = {
  users:
    'users u JOIN roles r ON r.id = u.role_id JOIN organizations o ON o.id = u.organization_id',
  login_activities: 'login_activities a',
};
const ALIAS: Record<string, string> = { users: 'u', login_activities: 'a' };

const totals = new Map<string, { total: number; at: number }>();
const knownTokens = new Set<string>();
/** Unknown token hashes and until when they are taken as unknown without asking the database. */
const unknownTokens = new Map<string, number>();
const UNKNOWN_TOKEN_TTL_MS = 5000;

async function total(table: string): Promise<number> {
  const cached = totals.get(table);
  if (cached && Date.now() - cached.at < 5000) return cached.total;
  const [[row]] = await pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${table}`);
  totals.set(table, { total: Number(row.n), at: Date.now() });
  return Number(row.n);
}

/**
 * Whether the token is a known one (remembered once found; an unknown one is remembered as such
 * for 5 s, so that a flood of one bad token costs the yardstick what it costs any server that
 * caches its look-ups: S4 is measured against it too).
 */
export async function isKnownToken(token: string): Promise<boolean> {
  const hash = createHash('sha256').update(token).digest('hex');
  if (knownTokens.has(hash)) return true;
  if ((unknownTokens.get(hash) ?? 0) > Date.now()) return false;
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT id FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL',
    [hash],
  );
  if (rows.length > 0) knownTokens.add(hash);
  else unknownTokens.set(hash, Date.now() + UNKNOWN_TOKEN_TTL_MS);
  return rows.length > 0;
}

function authorized(header: string | undefined): Promise<boolean> {
  const token = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
  return token ? isKnownToken(token) : Promise.resolve(false);
}

export interface Answer {
  status: number;
  body: unknown;
}

/** Whether the listing exists (the yardsticks answer 404 otherwise). */
export function isListing(table: string): boolean {
  return FROM[table] !== undefined;
}

export interface ReferencePage {
  rows: unknown[];
  page: number;
  limit: number;
  pageCount: number;
}

/** One page of a listing in id order, with its total from a cache of a few seconds. */
export async function readPage(table: string, page: number, limit: number): Promise<ReferencePage> {
  const count = await total(table);
  const alias = ALIAS[table];
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT ${COLUMNS[table]} FROM (SELECT id FROM ${table} ORDER BY id LIMIT ? OFFSET ?) p
       JOIN ${FROM[table]} ON ${alias}.id = p.id ORDER BY ${alias}.id`,
    [limit, (page - 1) * limit],
  );
  return { rows, page, limit, pageCount: Math.ceil(count / limit) };
}

/** The `{data, pagination}` envelope of a page. */
export function envelopeOf({ rows, page, limit, pageCount }: ReferencePage): unknown {
  return { data: rows, pagination: { current_page: page, limit, page_count: pageCount } };
}

/** The reply to `GET <url>` with that Authorization header. */
export async function answer(requestUrl: string, authorization?: string): Promise<Answer> {
  const url = new URL(requestUrl, 'http://localhost');
  const table = url.pathname.replace(/^\/v1\//, '');
  if (!isListing(table)) return { status: 404, body: { title: 'Not Found' } };
  if (!(await authorized(authorization))) return { status: 401, body: { title: 'Unauthorized' } };
  const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
  const limit = Math.min(100, Math.max(1, Number(url.searchParams.get('limit') ?? 20) || 20));
  return { status: 200, body: envelopeOf(await readPage(table, page, limit)) };
}
