import { BeforeApplicationShutdown, Injectable, Optional } from '@nestjs/common';
import { DataSource, QueryRunner } from 'typeorm';
import { clientBoundFor } from './app-data-source-options';
import { currentRequestSignal, stopIfAbandoned, untilAbandoned } from './abandoned-requests';
import { isServerGone } from '../common/problem-details/database-errors';
import { QueryKiller, ServerConnection } from './query-killer';
import { DatabasePools } from './pool-usage';
import { ReadReplicas, ReadSource, ReplicaLostError } from './read-replicas';
import { expandStatement, SqlDialect, Statement } from './sql-dialect';

export { expandStatement, type Statement } from './sql-dialect';

/** The error fields mysql2 gives a query that outlived its client-side `timeout`. */
const QUERY_TIMEOUT = { code: 'PROTOCOL_SEQUENCE_TIMEOUT', errorno: 'PROTOCOL_SEQUENCE_TIMEOUT' };

/** How often a KILL is sent to a statement that has not ended yet, and how long apart. */
const KILL_ATTEMPTS = 5;
const KILL_RETRY_MS = 100;

type StatementCallback = (error: Error | null, rows: unknown) => void;

/** What the runner uses of a mysql2 pool connection. */
interface MysqlConnection extends ServerConnection {
  /** A prepared statement (prepared once, kept in the connection's statement cache). */
  execute(sql: string, values: unknown[], callback: StatementCallback): unknown;
  /** A statement sent as text. */
  query(sql: string, values: unknown[], callback: StatementCallback): unknown;
  /** Gives the connection back to its pool. */
  release(): void;
}

/** How the runner runs statements on MySQL/MariaDB. */
export interface StatementOptions {
  /** Time limit of each statement, in ms (0 = none). */
  timeoutMs: number;
  /**
   * Run them as prepared statements (mysql2 `execute`, prepared once per connection and kept in
   * its statement cache) rather than as text. See `DB_PREPARED_STATEMENTS`.
   */
  prepared: boolean;
  /**
   * The client-side bound of each statement, in ms, instead of the one derived from the data
   * source's and `timeoutMs` (a question that must not wait as long as a request's statement).
   */
  clientBoundMs?: number;
}

/**
 * Statements running, and those being stopped (KILLs, then their connection dropped): at shutdown
 * the ones still running (background counts) are stopped, and the pools close once all have been.
 */
class StatementsInProgress {
  private readonly running = new Set<() => Promise<unknown>>();
  private readonly stopping = new Set<Promise<unknown>>();
  private closing = false;

  /** Once the stops have begun, no statement starts: it could not be stopped. */
  refuseIfClosing(): void {
    if (this.closing) throw new AppClosingError();
  }

  /** Registers how to stop a running statement; returns what unregisters it. */
  add(stop: () => Promise<unknown>): () => void {
    this.running.add(stop);
    return () => this.running.delete(stop);
  }

  track(stop: Promise<unknown>): void {
    this.stopping.add(stop);
    const done = () => this.stopping.delete(stop);
    stop.then(done, done);
  }

  async stopAll(): Promise<void> {
    this.closing = true;
    for (const stop of this.running) this.track(stop());
    await Promise.allSettled([...this.stopping]);
  }
}

/** How a read runs: its statements' limit and form, and on which server. */
export interface ReadOptions {
  /** Time limit of each statement, in ms (0 = none). */
  statementTimeoutMs?: number;
  /** Run the statements as prepared statements on MySQL/MariaDB (`DB_PREPARED_STATEMENTS`). */
  preparedStatements?: boolean;
  /** Read on this server rather than the next in the rotation (reads that must agree). */
  source?: ReadSource;
}

/**
 * The work of one read: statements run by `statements` on one connection (`runner`) of a server
 * that holds every row committed on the primary before `completeAsOf` (ms since the epoch).
 */
export type ReadWork<T> = (
  runner: QueryRunner,
  statements: StatementRunner,
  completeAsOf: number,
) => Promise<T>;

/** How long the server's version may take to come (a pool connection, then the question). */
const VERSION_LIMIT_MS = 1000;

/** How long, once the app's own statements are stopped, a connection may stay in use at shutdown. */
const IN_USE_GRACE_MS = 1000;

/** The least statement limit a read lost with its replica is retried on the primary with. */
const MIN_RETRY_MS = 300;

/**
 * Runs reads on the server that serves them now (a replica in the rotation, else the primary),
 * each statement under a time limit and stopped when its request is abandoned. Holds what every
 * `StatementRunner` shares: the database's dialect (asked once) and the query killer.
 */
@Injectable()
export class StatementRunners implements BeforeApplicationShutdown {
  private dialect?: Promise<SqlDialect>;
  private readonly statements = new StatementsInProgress();

  constructor(
    private readonly dataSource: DataSource,
    private readonly readReplicas: ReadReplicas,
    @Optional() private readonly killer?: QueryKiller,
    @Optional() private readonly pools?: DatabasePools,
  ) {}

  /**
   * A runner for one request's (or one count's) statements on `on`: the primary's data source, or
   * a read replica's (the same server software: the dialect is the primary's).
   */
  async runner(
    options: StatementOptions,
    on: DataSource = this.dataSource,
  ): Promise<StatementRunner> {
    return new StatementRunner(
      on,
      await this.primaryDialect(),
      options,
      this.killer,
      this.statements,
    );
  }

  /**
   * Stops what still runs once requests have drained (background counts), then drops connections
   * still busy a second on (TypeORM's own statements), so that the pools' close ends: mysql2
   * keeps a connection dropped after its pool began to close, and waits for a busy one.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.statements.stopAll();
    await this.pools?.dropStuck(IN_USE_GRACE_MS);
  }

  /** The primary's dialect, asked once (again after a failure). */
  private primaryDialect(): Promise<SqlDialect> {
    if (!this.dialect) {
      this.dialect = this.detect();
      this.dialect.catch(() => (this.dialect = undefined));
    }
    return this.dialect;
  }

  /**
   * The primary's dialect, from its version, asked as a read's statement is sent: bounded, its
   * connection dropped at the bound. On TypeORM's path the question could wait, with no bound
   * running, behind a statement a timed-out query left queued on its pooled connection, and
   * every request with it. Written as MySQL limits a statement (a comment to MariaDB).
   */
  private async detect(): Promise<SqlDialect> {
    if (this.dataSource.options.type !== 'mysql') return SqlDialect.of(undefined);
    const options = {
      timeoutMs: VERSION_LIMIT_MS,
      prepared: false,
      clientBoundMs: VERSION_LIMIT_MS,
    };
    const asking = new StatementRunner(this.dataSource, SqlDialect.of('mysql'), options);
    const runner = this.dataSource.createQueryRunner();
    try {
      const statement = { sql: 'SELECT VERSION() AS version', params: {} };
      const [row] = await asking.run<{ version?: unknown }>(runner, statement);
      return SqlDialect.of(String(row?.version ?? ''));
    } finally {
      await runner.release();
    }
  }

  /**
   * Runs `work` on one connection of the server that serves reads now, inside a read-only
   * REPEATABLE READ transaction when `snapshot` is set. A replica that dies under it takes no
   * request with it: nothing of the work has been answered yet, so it runs again on the primary.
   */
  async read<T>(
    snapshot: boolean,
    work: ReadWork<T>,
    options: ReadOptions,
  ): Promise<{ value: T; completeAsOf: number }> {
    const source = options.source ?? this.readReplicas.source();
    const started = Date.now();
    // Asked of the primary: its failure must not take a replica out of the rotation below.
    await this.primaryDialect();
    const lost = this.readReplicas.lostSignal(source);
    try {
      return await untilLost(this.readOn(source, snapshot, work, options), lost);
    } catch (error) {
      if (!source.isReplica || !(isServerGone(error) || error instanceof ReplicaLostError)) {
        throw error;
      }
      this.readReplicas.failed(source, error);
      // The retry gets what is left of the statement limit (in 100 ms steps: few statement texts),
      // at least MIN_RETRY_MS: the request still ends close to the limit, with its rows or a 503.
      const limit = options.statementTimeoutMs ?? 0;
      const left = Math.floor((limit - (Date.now() - started)) / 100) * 100;
      const retry =
        limit > 0 ? { ...options, statementTimeoutMs: Math.max(left, MIN_RETRY_MS) } : options;
      return this.readOn(this.readReplicas.primary, snapshot, work, retry);
    }
  }

  /** `work`, not in a snapshot, on the primary whatever the rotation (what must not lag: tokens). */
  async onPrimary<T>(work: ReadWork<T>, statementTimeoutMs: number): Promise<T> {
    const options = { statementTimeoutMs, source: this.readReplicas.primary };
    return (await this.read(false, work, options)).value;
  }

  private async readOn<T>(
    source: ReadSource,
    snapshot: boolean,
    work: ReadWork<T>,
    options: ReadOptions,
  ): Promise<{ value: T; completeAsOf: number }> {
    const completeAsOf = Date.now() - source.staleMs();
    const runner = source.dataSource.createQueryRunner();
    try {
      const statements = await this.runner(
        {
          timeoutMs: options.statementTimeoutMs ?? 0,
          prepared: options.preparedStatements ?? false,
        },
        source.dataSource,
      );
      if (!snapshot) return { value: await work(runner, statements, completeAsOf), completeAsOf };
      try {
        await statements.beginSnapshot(runner);
        const value = await work(runner, statements, completeAsOf);
        await statements.commit(runner);
        return { value, completeAsOf };
      } catch (error) {
        await statements.rollback(runner).catch(() => undefined);
        throw error;
      }
    } finally {
      await runner.release();
    }
  }
}

/**
 * Runs a request's listing statements on its connection: each under the request's time limit (as
 * `SqlDialect` writes it; it also bounds what an abandoned request can cost the database), each
 * seen by TypeORM's subscribers (the database metrics) whichever way it is sent, and none once the
 * request's client has left: a statement running then is stopped on the server (KILL QUERY).
 */
export class StatementRunner {
  private readonly timeoutMs: number;
  private readonly prepared: boolean;
  /** The client-side bound TypeORM gives `runner.query` (`enableQueryTimeout`), in ms; 0 = none. */
  private readonly dataSourceBoundMs: number;
  /**
   * This runner's own client-side bound: the data source's, or longer when the statement limit is
   * (a total's recount in the background): the client must not give up before the server would.
   */
  private readonly clientBoundMs: number;
  /** Runners whose connection was dropped after a KILL: nothing more is sent on them. */
  private readonly abandoned = new WeakSet<QueryRunner>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: SqlDialect,
    options: StatementOptions,
    private readonly killer?: QueryKiller,
    private readonly statements?: StatementsInProgress,
  ) {
    this.timeoutMs = options.timeoutMs;
    this.prepared = options.prepared && dialect.isServer;
    const { enableQueryTimeout, maxQueryExecutionTime } = dataSource.options as {
      enableQueryTimeout?: boolean;
      maxQueryExecutionTime?: number;
    };
    this.dataSourceBoundMs = enableQueryTimeout ? (maxQueryExecutionTime ?? 0) : 0;
    this.clientBoundMs =
      options.clientBoundMs ??
      (this.dataSourceBoundMs > 0
        ? Math.max(this.dataSourceBoundMs, clientBoundFor(this.timeoutMs))
        : 0);
  }

  /** Runs a SELECT with named parameters (`:name`) on `runner` and returns its raw rows. */
  async run<T>(runner: QueryRunner, statement: Statement): Promise<T[]> {
    const signal = currentRequestSignal();
    stopIfAbandoned(signal);
    const [expanded, parameters] = expandStatement(this.dataSource, statement);
    const sql = this.dialect.limited(expanded, this.timeoutMs);
    if (!this.dialect.isServer) return runner.query(sql, parameters) as Promise<T[]>;
    this.statements?.refuseIfClosing();
    // Waiting for a free connection can take a while under load: the client may be gone by then.
    const connection = await this.connection(runner);
    stopIfAbandoned(signal);
    this.statements?.refuseIfClosing();
    // Bounded in `send`, which drops the connection at its bound: mysql2's own timeout (TypeORM's
    // `runner.query`) leaves the statement queued on it, ahead of the next request's.
    const dropped = new AbortController();
    const execution = this.send<T>(
      runner,
      connection,
      this.prepared ? 'execute' : 'query',
      sql,
      parameters,
      dropped.signal,
    );
    let closing = false;
    const unregister = this.statements?.add(() => {
      closing = true;
      return this.stop(connection, settledOf(execution)).then(() =>
        dropped.abort(new AppClosingError()),
      );
    });
    try {
      return await this.stoppedWithRequest(runner, connection, execution, signal, dropped);
    } catch (error) {
      // Stopped for the shutdown (KILLed, or dropped): said as such, not as the driver's error.
      throw closing ? new AppClosingError() : error;
    } finally {
      unregister?.();
    }
  }

  /**
   * `execution`, stopped on the server if the request's client leaves while it runs (`stop`); the
   * connection is then dropped rather than given back (a KILL that arrived late must not hit the
   * next request's statement on it). The request then fails with its AbandonedRequestError, so it
   * starts nothing more.
   */
  private async stoppedWithRequest<T>(
    runner: QueryRunner,
    connection: MysqlConnection,
    execution: Promise<T>,
    signal: AbortSignal | undefined,
    dropped: AbortController,
  ): Promise<T> {
    if (!signal) return execution;
    let stopping: Promise<void> | undefined;
    const settled = settledOf(execution);
    // A statement not on the server yet (held on its way) answers nothing once its connection is
    // dropped: its wait ends there, not at the client's bound.
    const onAbort = () => {
      stopping = this.stop(connection, settled).then(() => dropped.abort(signal.reason as Error));
      this.statements?.track(stopping);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    let result: { rows: T } | { error: unknown };
    try {
      result = { rows: await execution };
    } catch (error) {
      result = { error };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (stopping) {
      await stopping;
      this.drop(runner, connection);
    }
    stopIfAbandoned(signal);
    if ('error' in result) throw result.error;
    return result.rows;
  }

  /**
   * KILL QUERY on the connection's id, through the killer's own pool, until its statement ends: a
   * KILL that lands between two commands of one statement (mysql2 prepares, then executes) stops
   * nothing, so it is sent again. Without a killer, or if it fails, the connection is dropped:
   * the statement's own callback then fails at once.
   */
  private async stop(connection: MysqlConnection, settled: Promise<void>): Promise<void> {
    const { killer } = this;
    const threadId = connection.threadId;
    if (killer && threadId !== null) {
      const ended = () =>
        Promise.race([
          settled.then(() => true),
          new Promise<false>((resolve) => setTimeout(() => resolve(false), KILL_RETRY_MS)),
        ]);
      try {
        for (let attempt = 0; attempt < KILL_ATTEMPTS; attempt++) {
          await killer.kill(connection, this.dialect.killQueryStatement(threadId));
          if (await ended()) return;
        }
      } catch {
        // dropped below
      }
    }
    connection.destroy();
  }

  /**
   * Runs `sql` on the runner's connection under this runner's client-side bound: as a prepared
   * statement (`execute`) or as text (`query`). Prepared, the server parses and plans a
   * statement once per connection instead of once per request: on the bench's first pages that
   * took a sixth to a fifth off the database's CPU time per request (README, Performance). Its
   * text must therefore repeat: values travel as parameters, LIMIT and OFFSET included.
   *
   * The client-side bound is kept here: mysql2's `execute` bounds only the execution, not the
   * preparing, and TypeORM's `runner.query` (`enableQueryTimeout`) would hold a recount, whose
   * limit is longer, to the requests' bound. Past it, the connection is dropped (a silent server
   * would otherwise hold it, and the request, for good) and the error is the one mysql2 gives for
   * a query timeout, which answers 503. Sent past TypeORM, the statement is announced to its
   * subscribers here, as `runner.query` would, so the database metrics count it.
   */
  private async send<T>(
    runner: QueryRunner,
    connection: MysqlConnection,
    method: 'execute' | 'query',
    sql: string,
    parameters: unknown[],
    /** Its connection was dropped: no answer will come, and the bound is not reached. */
    dropped?: AbortSignal,
  ): Promise<T[]> {
    const bound = this.clientBoundMs;
    const started = Date.now();
    await runner.broadcaster.broadcast('BeforeQuery', sql, parameters);
    const sent = new Promise<T[]>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      if (bound > 0) {
        timer = setTimeout(() => {
          settled = true;
          this.drop(runner, connection);
          this.dataSource.logger.logQuerySlow(bound, sql, undefined, runner);
          reject(Object.assign(new Error('Query inactivity timeout'), QUERY_TIMEOUT));
        }, bound);
      }
      const onDropped = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(dropped!.reason as Error);
      };
      if (dropped?.aborted) return onDropped();
      dropped?.addEventListener('abort', onDropped, { once: true });
      connection[method](sql, parameters, (error, rows) => {
        dropped?.removeEventListener('abort', onDropped);
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(rows as T[]);
      });
    });
    try {
      const rows = await sent;
      await runner.broadcaster.broadcast(
        'AfterQuery',
        sql,
        parameters,
        true,
        Date.now() - started,
        rows,
        undefined,
      );
      return rows;
    } catch (error) {
      await runner.broadcaster.broadcast(
        'AfterQuery',
        sql,
        parameters,
        false,
        undefined,
        undefined,
        error,
      );
      throw error;
    }
  }

  /**
   * Starts a read-only transaction whose reads all see one snapshot (nothing on SQLite: see
   * `SqlDialect.snapshotStatements`).
   */
  async beginSnapshot(runner: QueryRunner): Promise<void> {
    const signal = currentRequestSignal();
    for (const sql of this.dialect.snapshotStatements()) {
      stopIfAbandoned(signal);
      await this.control(runner, sql);
    }
  }

  async commit(runner: QueryRunner): Promise<void> {
    const sql = this.dialect.commitStatement();
    if (sql && !this.abandoned.has(runner)) await this.control(runner, sql);
  }

  /** Ends the transaction; on a connection dropped (a KILL, a bound) there is none left to end. */
  async rollback(runner: QueryRunner): Promise<void> {
    const sql = this.dialect.rollbackStatement();
    if (sql && !this.abandoned.has(runner)) await this.control(runner, sql);
  }

  /**
   * A statement of the transaction, bounded as `run`'s. The connection it fails on is dropped: its
   * transaction's state is unknown (a START that arrives late opens one on an idle connection).
   */
  private async control(runner: QueryRunner, sql: string): Promise<void> {
    if (!this.dialect.isServer) {
      await runner.query(sql);
      return;
    }
    const connection = await this.connection(runner);
    try {
      // A transaction's statement is short on the server: one held on its way is dropped with
      // its connection when the request stops, which ends the transaction.
      await this.send(runner, connection, 'query', sql, [], currentRequestSignal());
    } catch (error) {
      this.drop(runner, connection);
      throw error;
    }
  }

  /**
   * The runner's connection, waited for no longer than a statement may run: behind statements
   * that stall, a request answers 503 at its limit rather than after theirs. A connection that
   * comes after that goes back to the pool.
   */
  private async connection(runner: QueryRunner): Promise<MysqlConnection> {
    const pending = runner.connect() as Promise<MysqlConnection>;
    const bound = this.timeoutMs > 0 ? this.timeoutMs : this.clientBoundMs;
    if (bound <= 0) return pending;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Nothing more is sent on the runner (a snapshot's ROLLBACK would wait again). The late
        // connection goes back to the pool here, unless the runner, not yet released, will.
        this.abandoned.add(runner);
        pending.then(
          (late) => runner.isReleased && late.release(),
          () => undefined,
        );
        reject(Object.assign(new Error('No database connection came free in time'), QUERY_TIMEOUT));
      }, bound);
    });
    try {
      return await untilAbandoned(Promise.race([pending, timedOut]));
    } catch (error) {
      // Stopped with its request: the connection, late or the runner's own (a transaction may be
      // open on it), is dropped, so that the server ends what it held.
      if (currentRequestSignal()?.aborted) {
        this.abandoned.add(runner);
        pending.then(
          (connection) => this.drop(runner, connection),
          () => undefined,
        );
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops `runner`'s connection rather than giving it back: nothing more is sent on it. */
  private drop(runner: QueryRunner, connection: MysqlConnection): void {
    this.abandoned.add(runner);
    connection.destroy();
  }
}

/**
 * `read`, or a ReplicaLostError once `lost` fires: the read left behind ends at its own bound, its
 * connection dropped there, and answers no one.
 */
function untilLost<T>(read: Promise<T>, lost: AbortSignal | undefined): Promise<T> {
  if (!lost) return read;
  return new Promise<T>((resolve, reject) => {
    const onLost = () => reject(lost.reason as Error);
    if (lost.aborted) onLost();
    else lost.addEventListener('abort', onLost, { once: true });
    read.then(resolve, reject).finally(() => lost.removeEventListener('abort', onLost));
  });
}

/** When `work` has ended, either way. */
const settledOf = (work: Promise<unknown>): Promise<void> =>
  work.then(
    () => undefined,
    () => undefined,
  );

/** A statement stopped, or refused, because the app is shutting down. */
export class AppClosingError extends Error {
  constructor() {
    super('The app is shutting down');
  }
}
