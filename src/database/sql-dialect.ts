import type { DataSource } from 'typeorm';

export type Flavor = 'mariadb' | 'mysql' | 'sqlite';

/** A statement with named parameters (`:name`), as TypeORM's drivers expand them. */
export interface Statement {
  sql: string;
  params: Record<string, unknown>;
}

/** The first instant a DATETIME cannot hold (year 10000), in ms. */
const BEYOND_DATETIME_MS = Date.UTC(10000, 0, 1);

/**
 * Past every DATETIME(3) value, as a DATETIME: `< ` it holds for every row, `>=` for none, as for
 * an instant of year 10000 (the end of a window's last hour), which neither database takes.
 */
const AFTER_EVERY_DATETIME = '9999-12-31 23:59:59.999999';

const beyondDatetime = (value: unknown): boolean =>
  value instanceof Date && value.getTime() >= BEYOND_DATETIME_MS;

/** The statement as the driver runs it: SQL with positional placeholders, and their values. */
export function expandStatement(dataSource: DataSource, statement: Statement): [string, unknown[]] {
  let { params } = statement;
  // Copied only in the rare statement that needs it: this runs for every statement.
  if (Object.values(params).some(beyondDatetime)) {
    params = Object.fromEntries(
      Object.entries(params).map(([name, value]) => [
        name,
        beyondDatetime(value) ? AFTER_EVERY_DATETIME : value,
      ]),
    );
  }
  return dataSource.driver.escapeQueryWithParameters(statement.sql, params);
}

/**
 * What differs between the servers the listings run on, written as SQL text: how a statement's
 * time limit is spelled, how a read snapshot starts and how a statement is stopped. It only
 * writes SQL; `StatementRunner` runs it.
 */
export class SqlDialect {
  private constructor(readonly flavor: Flavor) {}

  /** The dialect of a server that says `version` (MariaDB's names it), or SQLite's without. */
  static of(version: string | undefined): SqlDialect {
    if (version === undefined) return new SqlDialect('sqlite');
    return new SqlDialect(/mariadb/i.test(version) ? 'mariadb' : 'mysql');
  }

  /** Whether the database is a server with connections of its own (MySQL or MariaDB). */
  get isServer(): boolean {
    return this.flavor !== 'sqlite';
  }

  /**
   * A SELECT (on MariaDB, an UPDATE too) under a time limit, written the way the server understands it: MariaDB
   * `SET STATEMENT max_statement_time=<s> FOR SELECT …`, MySQL the optimizer hint
   * `SELECT /*+ MAX_EXECUTION_TIME(<ms>) *\/ …`. A statement cut off fails with errno 1969 / 3024,
   * which the problem-details filter answers with 503 and Retry-After. SQLite has no such limit
   * (it is in-process and has no server to pin).
   */
  limited(sql: string, timeoutMs: number): string {
    if (timeoutMs <= 0 || !/^\s*(SELECT|UPDATE)\s/i.test(sql)) return sql;
    if (this.flavor === 'mariadb') {
      return `SET STATEMENT max_statement_time=${timeoutMs / 1000} FOR ${sql}`;
    }
    if (this.flavor === 'mysql' && /^\s*SELECT\s/i.test(sql)) {
      return sql.replace(/^\s*SELECT\s/i, `SELECT /*+ MAX_EXECUTION_TIME(${timeoutMs}) */ `);
    }
    return sql;
  }

  /**
   * The statements that start a read-only transaction whose reads all see one snapshot; none on
   * SQLite, where TypeORM shares one connection between all requests, so a transaction would take
   * in other requests' statements (the count and the page are read back to back instead).
   */
  snapshotStatements(): string[] {
    if (!this.isServer) return [];
    return [
      'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ',
      'START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY',
    ];
  }

  commitStatement(): string | undefined {
    return this.isServer ? 'COMMIT' : undefined;
  }

  rollbackStatement(): string | undefined {
    return this.isServer ? 'ROLLBACK' : undefined;
  }

  /** The statement that stops whatever the connection `threadId` is running (servers only). */
  killQueryStatement(threadId: number): string {
    return `KILL QUERY ${Math.trunc(threadId)}`;
  }
}
