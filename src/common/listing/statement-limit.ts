import type { DataSource, QueryRunner } from 'typeorm';
import { clientBoundFor } from '../../database/app-data-source-options';

type Flavor = 'mariadb' | 'mysql' | 'sqlite';

/** A statement with named parameters (`:name`), as TypeORM's drivers expand them. */
export interface Statement {
  sql: string;
  params: Record<string, unknown>;
}

/** The statement as the driver runs it: SQL with positional placeholders, and their values. */
export function expandStatement(dataSource: DataSource, statement: Statement): [string, unknown[]] {
  return dataSource.driver.escapeQueryWithParameters(statement.sql, statement.params);
}

/** The error fields mysql2 gives a query that outlived its client-side `timeout`. */
const QUERY_TIMEOUT = { code: 'PROTOCOL_SEQUENCE_TIMEOUT', errorno: 'PROTOCOL_SEQUENCE_TIMEOUT' };

const flavors = new WeakMap<DataSource, Promise<Flavor>>();
const idIndexes = new WeakMap<DataSource, Map<string, Promise<string | undefined>>>();

function flavorOf(dataSource: DataSource): Promise<Flavor> {
  let flavor = flavors.get(dataSource);
  if (!flavor) {
    flavor =
      dataSource.options.type === 'mysql'
        ? dataSource
            .query('SELECT VERSION() AS version')
            .then((rows: { version: string }[]) =>
              /mariadb/i.test(rows[0]?.version ?? '') ? 'mariadb' : 'mysql',
            )
        : Promise.resolve('sqlite');
    flavor.catch(() => flavors.delete(dataSource));
    flavors.set(dataSource, flavor);
  }
  return flavor;
}

type StatementCallback = (error: Error | null, rows: unknown) => void;

/** What StatementLimit uses of a mysql2 pool connection. */
interface MysqlConnection {
  /** A prepared statement (prepared once, kept in the connection's statement cache). */
  execute(sql: string, values: unknown[], callback: StatementCallback): unknown;
  /** A statement sent as text. */
  query(sql: string, values: unknown[], callback: StatementCallback): unknown;
  destroy(): void;
}

/** How StatementLimit runs statements on MySQL/MariaDB. */
export interface StatementOptions {
  /** Time limit of each statement, in ms (0 = none). */
  timeoutMs: number;
  /**
   * Run them as prepared statements (mysql2 `execute`, prepared once per connection and kept in
   * its statement cache) rather than as text. See `DB_PREPARED_STATEMENTS`.
   */
  prepared: boolean;
}

/**
 * Runs listing statements under the request's time limit, written the way the server
 * understands it: MariaDB `SET STATEMENT max_statement_time=<s> FOR SELECT …`, MySQL the
 * optimizer hint `SELECT /*+ MAX_EXECUTION_TIME(<ms>) *\/ …`. A statement cut off fails with
 * errno 1969 / 3024, which the problem-details filter answers with 503 and Retry-After. It
 * also bounds what an abandoned request can cost the database. SQLite has no such limit (it is
 * in-process and has no server to pin).
 */
export class StatementLimit {
  private readonly timeoutMs: number;
  private readonly prepared: boolean;
  /** The client-side bound TypeORM gives `runner.query` (`enableQueryTimeout`), in ms; 0 = none. */
  private readonly dataSourceBoundMs: number;
  /**
   * This limit's own client-side bound: the data source's, or longer when the statement limit is
   * (a total's recount in the background): the client must not give up before the server would.
   */
  private readonly clientBoundMs: number;

  private constructor(
    private readonly dataSource: DataSource,
    private readonly flavor: Flavor,
    options: StatementOptions,
  ) {
    this.timeoutMs = options.timeoutMs;
    this.prepared = options.prepared && flavor !== 'sqlite';
    const { enableQueryTimeout, maxQueryExecutionTime } = dataSource.options as {
      enableQueryTimeout?: boolean;
      maxQueryExecutionTime?: number;
    };
    this.dataSourceBoundMs = enableQueryTimeout ? (maxQueryExecutionTime ?? 0) : 0;
    this.clientBoundMs =
      this.dataSourceBoundMs > 0
        ? Math.max(this.dataSourceBoundMs, clientBoundFor(this.timeoutMs))
        : 0;
  }

  static async for(dataSource: DataSource, options: StatementOptions): Promise<StatementLimit> {
    return new StatementLimit(dataSource, await flavorOf(dataSource), options);
  }

  /** Runs a SELECT with named parameters (`:name`) on `runner` and returns its raw rows. */
  async run<T>(runner: QueryRunner, statement: Statement): Promise<T[]> {
    const [expanded, parameters] = expandStatement(this.dataSource, statement);
    const sql = this.limited(expanded);
    // TypeORM's `runner.query` bounds a text statement by the data source's bound; anything else
    // (a prepared statement, or a limit longer than the requests') is bounded in `send`.
    if (!this.prepared && this.clientBoundMs === this.dataSourceBoundMs) {
      return runner.query(sql, parameters) as Promise<T[]>;
    }
    return this.send<T>(runner, this.prepared ? 'execute' : 'query', sql, parameters);
  }

  /**
   * Runs `sql` on the runner's connection under this limit's client-side bound: as a prepared
   * statement (`execute`) or as text (`query`). Prepared, the server parses and plans a
   * statement once per connection instead of once per request: on the bench's first pages that
   * took a sixth to a fifth off the database's CPU time per request (README, Performance). Its
   * text must therefore repeat: values travel as parameters, LIMIT and OFFSET included.
   *
   * The client-side bound is kept here: mysql2's `execute` bounds only the execution, not the
   * preparing, and TypeORM's `runner.query` (`enableQueryTimeout`) would hold a recount, whose
   * limit is longer, to the requests' bound. Past it, the connection is dropped (a silent server
   * would otherwise hold it, and the request, for good) and the error is the one mysql2 gives for
   * a query timeout, which answers 503.
   */
  private async send<T>(
    runner: QueryRunner,
    method: 'execute' | 'query',
    sql: string,
    parameters: unknown[],
  ): Promise<T[]> {
    const connection = (await runner.connect()) as MysqlConnection;
    const bound = this.clientBoundMs;
    return new Promise<T[]>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      if (bound > 0) {
        timer = setTimeout(() => {
          settled = true;
          connection.destroy();
          this.dataSource.logger.logQuerySlow(bound, sql, undefined, runner);
          reject(Object.assign(new Error('Query inactivity timeout'), QUERY_TIMEOUT));
        }, bound);
      }
      connection[method](sql, parameters, (error, rows) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(rows as T[]);
      });
    });
  }

  /**
   * The name of an index on `table` whose only column is `id`, if there is one (MySQL/MariaDB):
   * walking it in id order reads ids only, where the primary key would read whole rows. Looked
   * up once, on the request's own connection: asking the pool for another while this one is held
   * would wait forever with DB_POOL_SIZE=1.
   */
  narrowIdIndex(runner: QueryRunner, table: string): Promise<string | undefined> {
    if (this.flavor === 'sqlite') return Promise.resolve(undefined);
    let byTable = idIndexes.get(this.dataSource);
    if (!byTable) idIndexes.set(this.dataSource, (byTable = new Map()));
    let found = byTable.get(table);
    if (!found) {
      found = runner
        .query(
          `SELECT INDEX_NAME AS name FROM information_schema.STATISTICS
            WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'
            GROUP BY INDEX_NAME
           HAVING COUNT(*) = 1 AND MAX(COLUMN_NAME) = 'id'`,
          [table],
        )
        .then((rows: { name: string }[]) => rows[0]?.name);
      found.catch(() => byTable.delete(table));
      byTable.set(table, found);
    }
    return found;
  }

  limited(sql: string): string {
    if (this.timeoutMs <= 0 || !/^\s*SELECT\s/i.test(sql)) return sql;
    if (this.flavor === 'mariadb') {
      return `SET STATEMENT max_statement_time=${this.timeoutMs / 1000} FOR ${sql}`;
    }
    if (this.flavor === 'mysql') {
      return sql.replace(/^\s*SELECT\s/i, `SELECT /*+ MAX_EXECUTION_TIME(${this.timeoutMs}) */ `);
    }
    return sql;
  }

  /**
   * Starts a read-only transaction whose reads all see one snapshot. On SQLite it does nothing:
   * TypeORM shares one connection between all requests there, so a transaction would take in
   * other requests' statements; the count and the page are read back to back instead (the
   * embedded database is only written by the token CLI and the demo seeding).
   */
  async beginSnapshot(runner: QueryRunner): Promise<void> {
    if (this.flavor === 'sqlite') return;
    await runner.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    await runner.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
  }

  async commit(runner: QueryRunner): Promise<void> {
    if (this.flavor !== 'sqlite') await runner.query('COMMIT');
  }

  async rollback(runner: QueryRunner): Promise<void> {
    if (this.flavor !== 'sqlite') await runner.query('ROLLBACK');
  }
}
