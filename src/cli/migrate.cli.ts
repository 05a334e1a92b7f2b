import { openDataSource, runCli, UsageError } from './cli-support';

/** Applies pending migrations to DATABASE_URL (or the embedded default). */
async function main(): Promise<void> {
  if (process.argv.length > 2) {
    throw new UsageError(`unexpected argument "${process.argv[2]}"\nusage: npm run migration:run`);
  }
  const { dataSource, applied } = await openDataSource({ migrationsRun: true });
  try {
    console.log(
      applied.length
        ? `applied ${applied.length} migration(s): ${applied.map((m) => m.name).join(', ')}`
        : 'the schema is up to date',
    );
  } finally {
    await dataSource.destroy();
  }
}

runCli(main);
