import { type DataSource, type Migration, MigrationExecutor, type QueryRunner } from 'typeorm';
import { oneAtATime, type TurnOptions } from './named-lock';

/**
 * Applies the pending migrations, one process at a time: instances started together with
 * DB_MIGRATIONS_RUN=true, or a CLI beside them, would otherwise run the same migration at once and
 * fail on each other's tables and indexes. On MySQL/MariaDB each in its own transaction under a
 * named lock; on SQLite all in one transaction that takes the file's write lock before it reads
 * which are pending. `turn`: how long to wait for another process's (MySQL/MariaDB), and who hears.
 * With none pending it takes no lock.
 */
export async function applyMigrations(
  dataSource: DataSource,
  turn?: TurnOptions,
): Promise<Migration[]> {
  // Nothing pending, nothing to lock: a start or a CLI does not wait for another process's
  // migrations, nor, on SQLite, for a writer of the file (30 s, then "database is locked").
  if ((await pendingMigrations(dataSource)).length === 0) return [];
  // SQLite's run in the one transaction that holds the file's write lock.
  const transaction = dataSource.options.type === 'mysql' ? 'each' : 'none';
  return oneAtATime(
    dataSource,
    'migrations',
    (runner) => pending(dataSource, runner, transaction),
    turn,
  );
}

/**
 * This build's migrations the database has not run, read without writing (no table: none), unlike
 * TypeORM's `showMigrations`, which creates its table: a read-only user gets the answer too.
 */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const { migrationsTableName = 'migrations' } = dataSource.options;
  let applied: string[];
  try {
    const rows: { name: string }[] = await dataSource.query(
      `SELECT name FROM ${dataSource.driver.escape(migrationsTableName)}`,
    );
    applied = rows.map((row) => row.name);
  } catch (error) {
    if (!/no such table|doesn't exist/i.test((error as Error).message)) throw error;
    applied = [];
  }
  return dataSource.migrations
    .map((migration) => migration.name ?? migration.constructor.name)
    .filter((name) => !applied.includes(name));
}

function pending(
  dataSource: DataSource,
  runner: QueryRunner,
  transaction: 'each' | 'none',
): Promise<Migration[]> {
  const executor = new MigrationExecutor(dataSource, runner);
  executor.transaction = transaction;
  return executor.executePendingMigrations();
}
