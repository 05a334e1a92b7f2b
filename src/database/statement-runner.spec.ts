import { EventEmitter } from 'node:events';
import type { Request, Response } from 'express';
import type { DataSource, QueryRunner } from 'typeorm';
import { AbandonedRequestError, abandonedRequestsMiddleware } from './abandoned-requests';
import type { AppConfig } from '../config/app-config';
import { QueryKiller } from './query-killer';
import type { ReadReplicas } from './read-replicas';
import { StatementRunners } from './statement-runner';

/** A query runner whose connection answers the server's version at once (MariaDB's). */
const answeringVersion = () => ({
  connect: async () => ({
    threadId: 1,
    query: (_sql: string, _values: unknown[], callback: (error: null, rows: unknown) => void) =>
      callback(null, [{ version: '10.11.19-MariaDB' }]),
    release: () => undefined,
    destroy: () => undefined,
  }),
  release: async () => undefined,
  broadcaster: { broadcast: async () => undefined },
});

/** The runners' statements alone are under test here, not where reads go. */
const NO_REPLICAS = {} as ReadReplicas;

/**
 * The client-side bound of a statement: the requests' (TypeORM's `maxQueryExecutionTime`, the
 * server's limit + 2 s), or longer for a limit that is longer (a total's recount in the
 * background), so that the client never gives up on a statement the server still allows.
 */
describe('StatementRunner, client-side bound', () => {
  const REQUEST_LIMIT_MS = 5000;
  const DATA_SOURCE_BOUND_MS = REQUEST_LIMIT_MS + 2000;

  const mariadb = () =>
    ({
      options: {
        type: 'mysql',
        enableQueryTimeout: true,
        maxQueryExecutionTime: DATA_SOURCE_BOUND_MS,
      },
      createQueryRunner: answeringVersion,
      driver: {
        escapeQueryWithParameters: (sql: string, params: Record<string, unknown>) => [
          sql,
          Object.values(params),
        ],
      },
      logger: { logQuerySlow: jest.fn() },
    }) as unknown as DataSource;

  /** A connection whose server never answers. */
  const silentConnection = () => ({ execute: jest.fn(), query: jest.fn(), destroy: jest.fn() });
  const runnerOn = (connection: ReturnType<typeof silentConnection>) =>
    ({
      connect: async () => connection,
      query: jest.fn(() => new Promise(() => undefined)),
      broadcaster: { broadcast: jest.fn(async () => undefined) },
    }) as unknown as QueryRunner & { query: jest.Mock };

  const count = { sql: 'SELECT COUNT(*) AS total FROM `t` t', params: {} };

  /** When (in ms of the fake clock) the statement was given up on, or undefined if it was not. */
  async function givenUpAt(run: Promise<unknown>, untilMs: number): Promise<number | undefined> {
    let failedAt: number | undefined;
    const started = Date.now();
    run.catch((error: { code?: string }) => {
      expect(error.code).toBe('PROTOCOL_SEQUENCE_TIMEOUT');
      failedAt = Date.now() - started;
    });
    for (let at = 0; at < untilMs && failedAt === undefined; at += 500) {
      await jest.advanceTimersByTimeAsync(500);
    }
    return failedAt;
  }

  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("holds a request's prepared statement to the data source's bound", async () => {
    const connection = silentConnection();
    const statements = await new StatementRunners(mariadb(), NO_REPLICAS).runner({
      timeoutMs: REQUEST_LIMIT_MS,
      prepared: true,
    });
    expect(await givenUpAt(statements.run(runnerOn(connection), count), 30_000)).toBe(
      DATA_SOURCE_BOUND_MS,
    );
    expect(connection.destroy).toHaveBeenCalled();
  });

  it("gives a recount's longer limit a longer bound: its own limit + 2 s, prepared or as text", async () => {
    for (const prepared of [true, false]) {
      const connection = silentConnection();
      const runner = runnerOn(connection);
      const statements = await new StatementRunners(mariadb(), NO_REPLICAS).runner({
        timeoutMs: 20_000,
        prepared,
      });
      expect(await givenUpAt(statements.run(runner, count), 30_000)).toBe(22_000);
      const sent = prepared ? connection.execute : connection.query;
      expect(sent).toHaveBeenCalledWith(
        'SET STATEMENT max_statement_time=20 FOR SELECT COUNT(*) AS total FROM `t` t',
        [],
        expect.any(Function),
      );
      // Not through TypeORM's runner.query, which would give up at the requests' bound.
      expect(runner.query).not.toHaveBeenCalled();
    }
  });

  it("holds a request's text statement to the bound too, and drops its connection there", async () => {
    // Not through TypeORM's runner.query: mysql2's own timeout fails the query but leaves it queued
    // on the connection, ahead of whatever the pool hands it to next.
    const connection = silentConnection();
    const runner = runnerOn(connection);
    const statements = await new StatementRunners(mariadb(), NO_REPLICAS).runner({
      timeoutMs: REQUEST_LIMIT_MS,
      prepared: false,
    });
    expect(await givenUpAt(statements.run(runner, count), 30_000)).toBe(DATA_SOURCE_BOUND_MS);
    expect(connection.query).toHaveBeenCalledWith(
      'SET STATEMENT max_statement_time=5 FOR SELECT COUNT(*) AS total FROM `t` t',
      [],
      expect.any(Function),
    );
    expect(connection.destroy).toHaveBeenCalled();
    expect(runner.query).not.toHaveBeenCalled();
  });
});

/** A request's statements stop when its client leaves (see abandonedRequestsMiddleware). */
describe('StatementRunner, abandoned requests', () => {
  const mariadb = () =>
    ({
      options: { type: 'mysql' },
      createQueryRunner: answeringVersion,
      driver: {
        escapeQueryWithParameters: (sql: string) => [sql, []],
      },
      logger: { logQuerySlow: jest.fn() },
    }) as unknown as DataSource;

  /** A connection whose statement runs until `interrupt` ends it. */
  const busyConnection = () => {
    let pending: ((error: Error | null, rows: unknown) => void) | undefined;
    return {
      threadId: 42,
      config: {},
      execute: jest.fn((_sql: string, _values: unknown[], callback: typeof pending) => {
        pending = callback;
      }),
      query: jest.fn(),
      destroy: jest.fn(),
      interrupt: () => pending?.(Object.assign(new Error('interrupted'), { errno: 1317 }), null),
    };
  };
  const runnerOn = (connection: ReturnType<typeof busyConnection>) =>
    ({
      connect: async () => connection,
      query: jest.fn(async () => []),
      broadcaster: { broadcast: jest.fn(async () => undefined) },
    }) as unknown as QueryRunner & { query: jest.Mock };

  /** Runs `work` as a request would, and gives a way for its client to leave. */
  function inRequest<T>(work: () => Promise<T>): { result: Promise<T>; leave: () => void } {
    const response = Object.assign(new EventEmitter(), { writableFinished: false });
    let result!: Promise<T>;
    abandonedRequestsMiddleware({} as Request, response as unknown as Response, () => {
      result = work();
    });
    return { result, leave: () => response.emit('close') };
  }

  const page = { sql: 'SELECT t.id AS id FROM `t` t', params: {} };

  it('sends KILL QUERY for the running statement, drops its connection and fails the request', async () => {
    const dataSource = mariadb();
    const killer = new QueryKiller({
      database: { kind: 'mysql', url: 'mysql://listing@127.0.0.1:3306/listing', replicaUrls: [] },
    } as unknown as AppConfig);
    const connection = busyConnection();
    const kill = jest.spyOn(killer, 'kill').mockImplementation(async () => connection.interrupt());
    const runner = runnerOn(connection);
    const statements = await new StatementRunners(dataSource, NO_REPLICAS, killer).runner({
      timeoutMs: 0,
      prepared: true,
    });

    const request = inRequest(() => statements.run(runner, page));
    await new Promise((resolve) => setImmediate(resolve));
    expect(connection.execute).toHaveBeenCalled();
    request.leave();

    await expect(request.result).rejects.toBeInstanceOf(AbandonedRequestError);
    expect(kill).toHaveBeenCalledWith(connection, 'KILL QUERY 42');
    expect(connection.destroy).toHaveBeenCalled();
    // Nothing more on that connection: not even the transaction's ROLLBACK.
    await inRequest(() => statements.rollback(runner)).result;
    expect(runner.query).not.toHaveBeenCalled();
  });

  it('drops a connection in a transaction whose client left between two statements', async () => {
    const connection = busyConnection();
    connection.query.mockImplementation(
      (_sql: string, _values: unknown[], callback: (error: null, rows: unknown) => void) =>
        callback(null, []),
    );
    const runner = runnerOn(connection);
    const statements = await new StatementRunners(mariadb(), NO_REPLICAS).runner({
      timeoutMs: 1000,
      prepared: true,
    });
    const request = inRequest(async () => {
      await statements.beginSnapshot(runner);
      await new Promise((resolve) => setImmediate(resolve)); // the client leaves meanwhile
      await statements.rollback(runner).catch(() => undefined);
    });
    await new Promise((resolve) => setImmediate(resolve));
    request.leave();
    await request.result;
    // Rolled back, or dropped: never given back to the pool inside the transaction.
    const rolledBack = connection.query.mock.calls.some(([sql]) => sql === 'ROLLBACK');
    expect(rolledBack || connection.destroy.mock.calls.length > 0).toBe(true);
  });

  it('starts no statement once the client has left', async () => {
    const connection = busyConnection();
    const runner = runnerOn(connection);
    const statements = await new StatementRunners(mariadb(), NO_REPLICAS).runner({
      timeoutMs: 0,
      prepared: true,
    });
    const request = inRequest(async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return statements.run(runner, page);
    });
    request.leave();
    await expect(request.result).rejects.toBeInstanceOf(AbandonedRequestError);
    expect(connection.execute).not.toHaveBeenCalled();
    expect(runner.query).not.toHaveBeenCalled();
  });
});
