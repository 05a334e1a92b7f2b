import type { Test } from 'supertest';
import type { DataSource } from 'typeorm';
import { toSqlDatetime } from '../../src/database/row-values';
import { seedDemoData } from '../../src/database/seed/demo-data';
import { startTestApp, TestApp } from './test-app';

/** A filter as the API takes it and as plain SQL states it, for the reference query. */
export interface FilterCase {
  parameter: string;
  value: string;
  sql: string;
  params: unknown[];
}

/** The query string of `filters` (and `sort`): what `referenceIds` answers for. */
export const filterQuery = (filters: FilterCase[], sort?: string): string =>
  new URLSearchParams([
    ...filters.map(({ parameter, value }): [string, string] => [parameter, value]),
    ...(sort ? [['sort', sort] as [string, string]] : []),
  ]).toString();

/**
 * An instant as the API reads it (any offset, a date as its midnight UTC, rounded up to the next
 * millisecond), in UTC as both databases compare it with a DATETIME(3) column.
 */
function sqlTime(iso: string): string {
  const at = new Date(iso.toUpperCase());
  if (Number.isNaN(at.getTime())) return iso;
  const beyondMilliseconds = /[1-9]/.test((/\.(\d+)/.exec(iso)?.[1] ?? '').slice(3));
  return toSqlDatetime(new Date(at.getTime() + (beyondMilliseconds ? 1 : 0)));
}

/** `parameter=value`, a column equal to it (booleans as 1 and 0). */
export function equalsFilter(
  parameter: string,
  value: string | number | boolean,
  column = parameter,
): FilterCase {
  const bound = typeof value === 'boolean' ? (value ? 1 : 0) : value;
  return { parameter, value: String(value), sql: `\`${column}\` = ?`, params: [bound] };
}

/**
 * `parameter=value` for a filter that matches byte for byte (`session_id`): the same value in
 * other capitals, which MySQL's collations take as equal, is not a match.
 */
export function exactFilter(parameter: string, value: string, column = parameter): FilterCase {
  const sql = `\`${column}\` = ? AND HEX(\`${column}\`) = HEX(?)`;
  return { parameter, value, sql, params: [value, value] };
}

/** A time range's end: `>=` for `…_from`, `<` for `…_to`. */
export function rangeFilter(
  parameter: string,
  iso: string,
  column: string,
  operator: '>=' | '<',
): FilterCase {
  return { parameter, value: iso, sql: `\`${column}\` ${operator} ?`, params: [sqlTime(iso)] };
}

/** `q`: a prefix of the name or the e-mail. */
export function prefixFilter(q: string): FilterCase {
  // `!`, `%` and `_` in `q` match themselves, as the API reads them.
  const pattern = `${q.replace(/[!%_]/g, (char) => `!${char}`)}%`;
  return {
    parameter: 'q',
    value: q,
    sql: "(name LIKE ? ESCAPE '!' OR email LIKE ? ESCAPE '!')",
    params: [pattern, pattern],
  };
}

/**
 * The `column` of the row `share` of the way through `table` in that column's order, in whole
 * seconds, so that the boundary's own row is on one side or the other by the rules.
 */
export async function timeAt(
  dataSource: DataSource,
  table: string,
  share: number,
  column = 'created_at',
): Promise<string> {
  const [{ n }] = await dataSource.query<{ n: number }[]>(`SELECT COUNT(*) AS n FROM \`${table}\``);
  const [row] = await dataSource.query<{ at: string }[]>(
    `SELECT CAST(\`${column}\` AS CHAR) AS at FROM \`${table}\` ORDER BY \`${column}\`, id LIMIT 1 OFFSET ${Math.floor(Number(n) * share)}`,
  );
  return `${row.at.slice(0, 19).replace(' ', 'T')}.000Z`;
}

/**
 * The database's own ids for the filters, the organization scope (if any) and the sort: a plain
 * statement, no index named.
 */
export async function referenceIds(
  dataSource: DataSource,
  table: string,
  filters: FilterCase[],
  sort: string,
  organizationId?: number,
): Promise<number[]> {
  const scoped = organizationId !== undefined;
  const where = [...filters.map((f) => f.sql), ...(scoped ? ['organization_id = ?'] : [])];
  const params = [...filters.flatMap((f) => f.params), ...(scoped ? [organizationId] : [])];
  const column = sort.replace(/^-/, '');
  const direction = sort.startsWith('-') ? 'DESC' : 'ASC';
  const rows = await dataSource.query<{ id: number }[]>(
    `SELECT id FROM \`${table}\`${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY \`${column}\` ${direction}, id ${direction}`,
    params,
  );
  return rows.map((r) => Number(r.id));
}

/** A supertest parser that keeps the body as text (an NDJSON export). */
export function textParser(
  response: NodeJS.ReadableStream & { setEncoding(encoding: string): void },
  callback: (error: Error | null, body: string) => void,
): void {
  let text = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => (text += chunk));
  response.on('end', () => callback(null, text));
}

/** `request` as an NDJSON export (`Accept: application/x-ndjson`), its body kept whole as text. */
export const asExport = (request: Test): Test =>
  request
    .set('Accept', 'application/x-ndjson')
    .buffer(true)
    .parse(textParser as never);

/** The ids of a JSON page's items. */
export const pageIds = (body: { data: { id: number }[] }): number[] =>
  body.data.map((item) => item.id);

/** The ids of an NDJSON export's lines. */
export const exportedIds = (body: unknown): number[] =>
  String(body)
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { id: number }).id);

/** An app on seeded demo data, with a platform-wide and an organization-scoped token. */
export interface QueryApp {
  kit: TestApp;
  organizationId: number;
  /** A GET with the scoped token, or the platform-wide one. */
  get(path: string, scoped: boolean): ReturnType<ReturnType<TestApp['http']>['get']>;
  /** `referenceIds` under the same scope. */
  reference(table: string, filters: FilterCase[], sort: string, scoped: boolean): Promise<number[]>;
  /** `timeAt` on this app's database. */
  timeAt(table: string, share: number, column?: string): Promise<string>;
  /** The ids of the path's NDJSON export, with the reply's status. */
  exported(path: string, scoped: boolean): Promise<{ status: number; ids: number[] }>;
}

export async function startQueryApp(
  env: Record<string, string>,
  seed: { users: number; activities: number; organizations: number },
): Promise<QueryApp> {
  const kit = await startTestApp({
    env: { RATE_LIMIT_PER_MINUTE: '0', TAIL_HOLDBACK_MS: '0', ...env },
  });
  await seedDemoData(kit.dataSource, {
    ...seed,
    batchSize: 500,
    now: new Date('2026-11-21T00:00:00.000Z'),
  });
  const token = await kit.token();
  const [first] = await kit.dataSource.query<{ id: number }[]>(
    'SELECT organization_id AS id FROM users ORDER BY id LIMIT 1',
  );
  const organizationId = Number(first.id);
  const scopedToken = await kit.token({ organizationId });
  const get: QueryApp['get'] = (path, scoped) =>
    kit
      .http()
      .get(path)
      .set('Authorization', `Bearer ${scoped ? scopedToken : token}`);
  return {
    kit,
    organizationId,
    get,
    reference: (table, filters, sort, scoped) =>
      referenceIds(kit.dataSource, table, filters, sort, scoped ? organizationId : undefined),
    timeAt: (table, share, column) => timeAt(kit.dataSource, table, share, column),
    exported: async (path, scoped) => {
      const reply = await asExport(get(path, scoped));
      return { status: reply.status, ids: exportedIds(reply.body) };
    },
  };
}
