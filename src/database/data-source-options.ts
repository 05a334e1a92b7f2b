import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { ApiToken } from '../auth/api-token.entity';
import { databaseConnection } from './database-url';
import { migrations } from './migrations';

// Only what is queried through TypeORM: the listings read their tables with SQL of their own.
export const entities = [ApiToken];

/**
 * `work` on the database; on the embedded file, a failure names SQLITE_PATH and its cause (the
 * driver's own message names neither the variable nor the path): the server and the CLIs alike.
 */
export async function namingSqlitePath<T>(
  database: AppConfig['database'],
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (database.kind !== 'sqlite') throw error;
    const path = JSON.stringify(database.sqlitePath);
    const message = `SQLITE_PATH=${path}: cannot use it as the database (${(error as Error).message})`;
    throw Object.assign(new Error(message, { cause: error }), { code: 'sqlite_unusable' });
  }
}

/**
 * The one TypeORM options object, shared by the app, the CLIs and the test kit: the primary's
 * (the read replicas get data sources of their own, `ReadReplicas`).
 * `synchronize` is never on: the schema comes from the migrations.
 */
export function buildDataSourceOptions(config: AppConfig): DataSourceOptions {
  const { database } = config;
  if (database.kind === 'mysql') {
    return {
      type: 'mysql',
      ...databaseConnection(database.url!),
      charset: 'utf8mb4_unicode_ci',
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: false,
      poolSize: database.poolSize,
      connectTimeout: 5000,
      ...schemaOptions(),
      extra: {
        // 0 lets requests wait for a free connection without a cap on the queue: every statement is
        // bounded by the statement time limit, so the wait is bounded too (see README, Performance).
        queueLimit: 0,
        enableKeepAlive: true,
        decimalNumbers: true,
        dateStrings: false,
        // mysql2 would capture a stack trace for every query, to point errors at the caller; the
        // repositories' own errors say enough, and the capture costs about 2% of a request's CPU.
        trace: false,
        // Each connection's cache of prepared listing statements (StatementRunner), closed on the
        // server when evicted. mysql2 would size it for 16,000 (four arrays of that length, about
        // 0.5 MB of heap per pooled connection that every full GC walks) and reads 0 as that too.
        // The server caps them all at max_prepared_stmt_count (16,382 by default): this times
        // DB_POOL_SIZE times the number of instances must stay below it.
        maxPreparedStatements: Math.max(1, database.preparedStatements),
      },
    };
  }
  // SQLite's own name for a database in memory, not a file's (one per process, seeded at boot).
  const inMemory = database.sqlitePath === ':memory:';
  const path = inMemory ? database.sqlitePath : resolve(database.sqlitePath);
  if (!inMemory) {
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      const message = `SQLITE_PATH=${JSON.stringify(database.sqlitePath)}: no folder for it (${(error as Error).message})`;
      throw Object.assign(new Error(message), { code: 'sqlite_unusable' });
    }
  }
  return {
    type: 'better-sqlite3',
    database: path,
    // WAL lets the token CLI write while the server reads the same file.
    enableWAL: true,
    prepareDatabase: (db: { pragma: (sql: string) => unknown }) => {
      // The CLIs and the server's migrations wait out another writer's transaction; once up, the
      // server waits for none (DatabaseAvailability).
      db.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
      db.pragma('foreign_keys = ON');
    },
    ...schemaOptions(),
  };
}

/** How long a write waits for another process's lock on the SQLite file. */
const SQLITE_BUSY_TIMEOUT_MS = 30_000;

/** What both databases share: the entities, and a schema that comes from the migrations only. */
function schemaOptions() {
  return {
    entities,
    migrations,
    // Applied by `applyMigrations` where DB_MIGRATIONS_RUN says so, under a lock on MySQL.
    migrationsRun: false,
    synchronize: false,
    logging: false,
  } as const;
}
