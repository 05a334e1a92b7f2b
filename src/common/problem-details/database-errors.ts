/**
 * Driver errors that mean "the database cannot answer right now" (down, unreachable, out of
 * connections, or a statement cut off by its time limit), as opposed to a bug in our SQL.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_QUERY_TIMEOUT', // MariaDB max_statement_time
  'ER_STATEMENT_TIMEOUT',
  'ER_QUERY_INTERRUPTED',
  'ER_LOCK_WAIT_TIMEOUT',
  'POOL_NOEXIST', // every read replica set aside after errors (mysql2 pool cluster)
  'POOL_NONEONLINE',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);
// MySQL 3024: "Query execution was interrupted, maximum statement execution time exceeded".
// MariaDB 1969: "Query execution was interrupted (max_statement_time exceeded)".
const UNAVAILABLE_ERRNOS = new Set([3024, 1969, 1317, 1040, 2002, 2003, 2006, 2013]);

export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const candidate = current as { code?: unknown; errno?: unknown; driverError?: unknown };
    if (typeof candidate.code === 'string' && UNAVAILABLE_CODES.has(candidate.code)) return true;
    if (typeof candidate.errno === 'number' && UNAVAILABLE_ERRNOS.has(candidate.errno)) return true;
    if (
      current instanceof Error &&
      /Connection is not established|pool is closed|database connection is not open/i.test(
        current.message,
      )
    ) {
      return true;
    }
    current = candidate.driverError ?? (current as { cause?: unknown }).cause;
  }
  return false;
}
