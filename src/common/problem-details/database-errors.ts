/**
 * Driver errors that mean the server (or the way to it) went away under a statement: down,
 * unreachable, shutting down, or the connection lost. A statement cut off by its time limit is
 * not one: the server is there, and the time is spent.
 */
const GONE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_USER_LIMIT_REACHED',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
]);
// 1040 too many connections (1203 and 1226 for the account: its own limits), 1053 shutting down,
// 1927 connection killed, 2002-2013 client side.
const GONE_ERRNOS = new Set([1040, 1053, 1203, 1226, 1927, 2002, 2003, 2006, 2013]);

/**
 * Driver errors that mean "the database cannot answer right now" (gone, as above, or a statement
 * cut off by its time limit or a lock), as opposed to a bug in our SQL.
 */
const UNAVAILABLE_CODES = new Set([
  ...GONE_CODES,
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_QUERY_TIMEOUT', // MariaDB max_statement_time
  'ER_STATEMENT_TIMEOUT',
  'ER_QUERY_INTERRUPTED',
  'ER_LOCK_WAIT_TIMEOUT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);
// MySQL 3024: "Query execution was interrupted, maximum statement execution time exceeded".
// MariaDB 1969: "Query execution was interrupted (max_statement_time exceeded)". 1317 interrupted.
const UNAVAILABLE_ERRNOS = new Set([...GONE_ERRNOS, 3024, 1969, 1317]);

/** How a reply says the database cannot answer right now, and when to retry (seconds). */
export const DATABASE_UNAVAILABLE = {
  detail: 'The database is unavailable or too slow right now; retry shortly.',
  retryAfterSeconds: '5',
};

export function isDatabaseUnavailable(error: unknown): boolean {
  return saysAnyOf(error, UNAVAILABLE_CODES, UNAVAILABLE_ERRNOS);
}

/** Whether `error` says the server went away under the statement (see GONE_CODES). */
export function isServerGone(error: unknown): boolean {
  return saysAnyOf(error, GONE_CODES, GONE_ERRNOS);
}

function saysAnyOf(error: unknown, codes: Set<string>, errnos: Set<number>): boolean {
  return causes(error).some(
    ({ code, errno, message }) =>
      (code !== undefined && codes.has(code)) ||
      (errno !== undefined && errnos.has(errno)) ||
      (message !== undefined && CLOSED_CONNECTION.test(message)),
  );
}

const CLOSED_CONNECTION =
  /Connection is not established|pool is closed|database connection is not open|connection is in closed state|write in closed state/i;

/** The error and the errors it wraps (TypeORM's driverError, a cause), with what they say. */
function causes(error: unknown): { code?: string; errno?: number; message?: string }[] {
  const found = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const candidate = current as { code?: unknown; errno?: unknown; driverError?: unknown };
    found.push({
      code: typeof candidate.code === 'string' ? candidate.code : undefined,
      errno: typeof candidate.errno === 'number' ? candidate.errno : undefined,
      message: current instanceof Error ? current.message : undefined,
    });
    current = candidate.driverError ?? (current as { cause?: unknown }).cause;
  }
  return found;
}
