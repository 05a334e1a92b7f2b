import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { applyMigrations } from '../../src/database/apply-migrations';
import { buildDataSourceOptions } from '../../src/database/data-source-options';
import { migrations } from '../../src/database/migrations';
import { createTestDatabase, TestDatabase, testTarget } from '../kit';

const open = (database: TestDatabase) =>
  new DataSource(
    buildDataSourceOptions(
      loadConfig({ NODE_ENV: 'test', DB_MIGRATIONS_RUN: 'false', ...database.env }),
    ),
  ).initialize();

/** Each table's definition, as the database states it. */
async function schemaOf(dataSource: DataSource): Promise<Record<string, string>> {
  if (testTarget === 'mysql') {
    const tables: { name: string }[] = await dataSource.query(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()',
    );
    const schema: Record<string, string> = {};
    for (const { name } of tables) {
      const [row] = await dataSource.query(`SHOW CREATE TABLE \`${name}\``);
      schema[name] = String(row['Create Table']).replace(/ AUTO_INCREMENT=\d+/, '');
    }
    return schema;
  }
  const rows: { name: string; sql: string | null }[] = await dataSource.query(
    "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
  );
  return Object.fromEntries(rows.map(({ name, sql }) => [name, String(sql)]));
}

/**
 * A deploy stopped during a migration (an index build of an hour at 50M rows, killed by its
 * orchestrator) leaves on MySQL/MariaDB the DDL it had done, since DDL commits at once, and the
 * migration unrecorded: the next start runs it again over what it had done. Each migration's `up`
 * run twice must therefore succeed and leave the schema a single run leaves.
 */
describe('a migration run again over its own work, as after a stopped deploy', () => {
  let twice: TestDatabase;
  let once: TestDatabase;
  beforeAll(async () => {
    [twice, once] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([twice?.drop(), once?.drop()]);
  });

  it('succeeds for every migration, and the schema is the one a single run gives', async () => {
    const repeated = await open(twice);
    const single = await open(once);
    try {
      const runner = repeated.createQueryRunner();
      try {
        for (const Migration of migrations) {
          const migration = new Migration();
          await migration.up(runner);
          await expect(migration.up(runner)).resolves.toBeUndefined();
        }
      } finally {
        await runner.release();
      }
      await applyMigrations(single);
      const { migrations: _table, ...expected } = await schemaOf(single);
      expect(Object.keys(expected).length).toBeGreaterThan(3);
      expect(await schemaOf(repeated)).toEqual(expected);
    } finally {
      await Promise.all([repeated.destroy(), single.destroy()]);
    }
  });
});
