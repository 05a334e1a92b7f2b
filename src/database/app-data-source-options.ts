import { Logger } from '@nestjs/common';
import type { DataSourceOptions, Logger as TypeOrmLogger } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { buildDataSourceOptions } from './data-source-options';
import { countedMysqlDriver, PoolUsage } from './pool-usage';

/** How much longer than the server-side statement limit the client waits before giving up. */
const MARGIN_MS = 2000;
/** The bound when there is no server-side limit (DB_STATEMENT_TIMEOUT_MS=0). */
const WITHOUT_STATEMENT_LIMIT_MS = 60_000;

/** How long the client waits for a statement the server cuts off after `limitMs` (0 = never). */
export const clientBoundFor = (limitMs: number): number =>
  limitMs > 0 ? limitMs + MARGIN_MS : WITHOUT_STATEMENT_LIMIT_MS;

/**
 * The app's TypeORM options: the shared ones plus what only the serving process wants.
 *
 * - A client-side time bound on every query on MySQL (mysql2's per-query `timeout`, through
 *   TypeORM's `enableQueryTimeout`). The server cuts slow statements itself; this catches what it
 *   cannot: a database or network gone silent, where a query (and the request, and the pool
 *   connection it holds) would otherwise wait forever. mysql2 fails the query but keeps it queued
 *   on its connection: the StatementRunner's reads bound themselves instead, and drop it. The CLIs
 *   (migrations) keep no such bound.
 * - TypeORM's own messages through the app's logger, without query parameters.
 * - On MySQL, its pool counted by `pool` (the metrics' gauges).
 */
export function buildAppDataSourceOptions(config: AppConfig, pool?: PoolUsage): DataSourceOptions {
  const options: DataSourceOptions = {
    ...buildDataSourceOptions(config),
    logger: new DatabaseLogger(),
  };
  if (options.type !== 'mysql') return options;
  return {
    ...options,
    ...(pool ? { driver: countedMysqlDriver(pool) } : {}),
    enableQueryTimeout: true,
    maxQueryExecutionTime: clientBoundFor(config.database.statementTimeoutMs),
  };
}

/** A replica that cannot be connected to within this is as good as down: the primary serves. */
const REPLICA_CONNECT_TIMEOUT_MS = 2000;

/**
 * A read replica's options: the app's, on the replica's URL, never migrating (the replica gets
 * the schema from the primary), and quicker to give up connecting.
 */
export function buildReplicaDataSourceOptions(
  config: AppConfig,
  url: string,
  pool?: PoolUsage,
): DataSourceOptions {
  const options = buildAppDataSourceOptions(
    { ...config, database: { ...config.database, url, migrationsRun: false } },
    pool,
  );
  return { ...options, connectTimeout: REPLICA_CONNECT_TIMEOUT_MS } as DataSourceOptions;
}

/**
 * TypeORM's messages as JSON log lines. Query parameters are never written (they hold e-mails,
 * token hashes); failed queries are not logged here (timeouts aside), since the request's error
 * reply and the problem-details filter already account for them.
 */
export class DatabaseLogger implements TypeOrmLogger {
  private readonly logger = new Logger('Database');
  /** The query last noted as slow: TypeORM may report the same one as failed right after. */
  private lastSlowQuery?: string;

  logQuery(): void {
    this.lastSlowQuery = undefined;
  }

  /**
   * A query the client gave up on (mysql2's per-query timeout) is noted as slow too. TypeORM
   * notes it itself only when its clock read past the limit, which a timer that fires on the
   * millisecond does not; it then also reports it here, and it is noted once.
   */
  logQueryError(error: string | Error, query: string): void {
    const timedOut = (error as { code?: unknown }).code === 'PROTOCOL_SEQUENCE_TIMEOUT';
    const notedAlready = this.lastSlowQuery === query;
    this.lastSlowQuery = undefined;
    if (timedOut && !notedAlready)
      this.logger.warn(`slow query (timed out): ${query.slice(0, 500)}`);
  }

  logQuerySlow(time: number, query: string): void {
    this.lastSlowQuery = query;
    this.logger.warn(`slow query (${time} ms): ${query.slice(0, 500)}`);
  }

  logSchemaBuild(): void {}

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
    else this.logger.debug?.(String(message));
  }
}
