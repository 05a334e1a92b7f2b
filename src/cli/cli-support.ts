import 'reflect-metadata';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource, Migration } from 'typeorm';
import { AppConfig, ConfigError, loadConfig } from '../config/app-config';
import { applyMigrations, pendingMigrations } from '../database/apply-migrations';
import { buildDataSourceOptions, namingSqlitePath } from '../database/data-source-options';
import type { TurnOptions } from '../database/named-lock';

export class UsageError extends Error {}

/** How a CLI waits for another process's migrations or seed: said on stderr. */
export const CLI_TURN: TurnOptions = { onWait: (message) => console.error(message) };

/**
 * Opens the database the way the app does (same options object), always on the primary. On the
 * embedded default it also applies pending migrations, so the CLIs work on a fresh clone.
 */
export async function openDataSource(
  overrides: Partial<AppConfig['database']> = {},
): Promise<{ dataSource: DataSource; config: AppConfig; applied: Migration[] }> {
  const loaded = loadConfig();
  const config: AppConfig = {
    ...loaded,
    database: { ...loaded.database, replicaUrls: [], ...overrides },
  };
  const dataSource = new DataSource(buildDataSourceOptions(config));
  const applied = await namingSqlitePath(config.database, async () => {
    await dataSource.initialize();
    return config.database.migrationsRun ? applyMigrations(dataSource, CLI_TURN) : [];
  });
  return { dataSource, config, applied };
}

/**
 * `openDataSource` for a CLI that reads the service's tables: one that lacks this build's
 * migrations says how to apply them, not which table the database could not find.
 */
export async function openMigratedDataSource(): Promise<{
  dataSource: DataSource;
  config: AppConfig;
}> {
  const opened = await openDataSource();
  if ((await pendingMigrations(opened.dataSource)).length) {
    await opened.dataSource.destroy();
    throw new Error(
      "the database lacks this build's migrations: run `npm run migration:run` first",
    );
  }
  return opened;
}

/** Runs a CLI's main function with clear messages and exit codes (2 for usage, 1 for failure). */
export function runCli(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      if (error instanceof UsageError || error instanceof ConfigError) {
        console.error(error.message);
        process.exit(2);
      }
      console.error(error instanceof Error ? `error: ${error.message}` : error);
      process.exit(1);
    },
  );
}

/**
 * Registers every module's scopes without booting the app: each module defines its scopes in its
 * `*.listing.ts` (see scope-registry.ts), so loading those files (and only those: the CLI stays
 * fast) is enough for the token issuer to know them.
 */
export function loadListingScopes(root = join(__dirname, '..')): void {
  for (const entry of readdirSync(root, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.listing\.(ts|js)$/.test(entry.name)) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- found at run time
      require(join(entry.parentPath, entry.name));
    }
  }
}
