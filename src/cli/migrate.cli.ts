import { openDataSource, runCli, UsageError } from './cli-support';

const USAGE = `usage: npm run migration:run
Applies the pending migrations to DATABASE_URL (or the embedded SQLite file).`;

/** Applies pending migrations to DATABASE_URL (or the embedded default). */
async function main(): Promise<void> {
  const [argument] = process.argv.slice(2);
  if (argument === '--help' || argument === '-h') return console.log(USAGE);
  if (argument !== undefined) throw new UsageError(`unexpected argument "${argument}"\n${USAGE}`);
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
