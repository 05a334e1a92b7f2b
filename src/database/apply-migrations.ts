import { type DataSource, type Migration, MigrationExecutor } from 'typeorm';
import { oneAtATime } from './named-lock';

/**
 * Applies the pending migrations, each in its own transaction, one process at a time: instances
 * started together with DB_MIGRATIONS_RUN=true, or a CLI beside them, would otherwise run the same
 * migration at once and fail on each other's indexes.
 */
export function applyMigrations(dataSource: DataSource): Promise<Migration[]> {
  return oneAtATime(dataSource, 'migrations', (runner) => {
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    return executor.executePendingMigrations();
  });
}
