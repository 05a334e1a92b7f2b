import { Readable } from 'node:stream';
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/app-config';
import { buildDataSourceOptions } from '../../src/database/data-source-options';
import { ACTIVITY_COLUMNS, activityRow, seedDemoData } from '../../src/database/seed/demo-data';
import { SeededRandom } from '../../src/database/seed/random';

export interface BenchSize {
  name: string;
  users: number;
  activities: number;
}

export const SIZES: Record<string, BenchSize> = {
  tiny: { name: 'tiny', users: 2_000, activities: 20_000 },
  small: { name: 'small', users: 20_000, activities: 200_000 },
  large: { name: 'large', users: 200_000, activities: 5_000_000 },
};

const log = (message: string) => console.log(`[bench] ${message}`);

/** The URL of the bench database `name` on the server of DATABASE_URL (or the local default). */
export function benchDatabaseUrl(name: string): string {
  const url = new URL(process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306');
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Makes sure `listing_bench_<size>` holds exactly the rows of that size, seeding it when it does
 * not (an interrupted or different load is dropped and redone). Returns its URL.
 */
export async function ensureBenchDatabase(size: BenchSize): Promise<string> {
  const name = `listing_bench_${size.name}`;
  const url = benchDatabaseUrl(name);
  const admin = await createConnection({ uri: benchDatabaseUrl('') });
  try {
    const [rows] = await admin.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM information_schema.TABLES
        WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'bench_loaded'`,
      [name],
    );
    if (Number(rows[0].n) > 0) {
      const [[loaded]] = await admin.query<RowDataPacket[]>(
        `SELECT users, activities FROM \`${name}\`.bench_loaded LIMIT 1`,
      );
      if (Number(loaded?.users) === size.users && Number(loaded?.activities) === size.activities) {
        log(`${name}: reusing ${size.users} users / ${size.activities} activities`);
        await migrate(url); // picks up index migrations added since the load
        return url;
      }
    }
    log(`${name}: (re)creating`);
    await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await admin.query(
      `CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await admin.end();
  }
  await load(url, size);
  return url;
}

async function migrate(url: string): Promise<void> {
  const dataSource = await openBenchDataSource(url);
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    if (applied.length) {
      log(`applied ${applied.map((migration) => migration.name).join(', ')}`);
      await dataSource.query('ANALYZE TABLE organizations, roles, users, login_activities');
    }
  } finally {
    await dataSource.destroy();
  }
}

export async function openBenchDataSource(url: string): Promise<DataSource> {
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: url, DB_MIGRATIONS_RUN: 'false' });
  const dataSource = new DataSource(buildDataSourceOptions(config));
  await dataSource.initialize();
  return dataSource;
}

interface IndexDefinition {
  name: string;
  unique: boolean;
  columns: string[];
}

/** The secondary indexes of `table` as the migrations created them. */
async function secondaryIndexes(connection: Connection, table: string): Promise<IndexDefinition[]> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT INDEX_NAME AS name, NON_UNIQUE AS non_unique, COLUMN_NAME AS column_name
       FROM information_schema.STATISTICS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'
      ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [table],
  );
  const byName = new Map<string, IndexDefinition>();
  for (const row of rows) {
    const index: IndexDefinition = byName.get(row.name) ?? {
      name: String(row.name),
      unique: Number(row.non_unique) === 0,
      columns: [],
    };
    index.columns.push(String(row.column_name));
    byName.set(row.name, index);
  }
  return [...byName.values()];
}

const ACTIVITIES_PER_LOAD = 500_000;

/**
 * Schema through the real migrations; organizations and users through the demo seeder (its
 * batched INSERTs are quick enough for 200k rows); login activity, the big table, streamed with
 * LOAD DATA LOCAL INFILE in chunks while its secondary indexes are dropped, then the indexes are
 * rebuilt in one ALTER (a sorted build, far quicker than 5M random index inserts) and the
 * tables analyzed.
 */
async function load(url: string, size: BenchSize): Promise<void> {
  const started = Date.now();
  const seconds = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const dataSource = await openBenchDataSource(url);
  const now = new Date();
  try {
    await dataSource.runMigrations({ transaction: 'each' });
    await seedDemoData(dataSource, { users: size.users, activities: 0, batchSize: 2000, now });
    log(`users: ${size.users} in ${seconds()}`);
  } finally {
    await dataSource.destroy();
  }

  let pending: Readable | undefined;
  const connection = await createConnection({
    uri: url,
    infileStreamFactory: () => {
      if (!pending) throw new Error('no LOAD DATA stream prepared');
      return pending;
    },
  });
  try {
    await connection.query('SET SESSION unique_checks = 0, foreign_key_checks = 0');
    const [users] = await connection.query<RowDataPacket[]>(
      'SELECT id, email, organization_id FROM users ORDER BY id',
    );
    const emails = users.map((user) => String(user.email));
    const organizations = users.map((user) => Number(user.organization_id));
    const firstUserId = Number(users[0]?.id ?? 1);

    const indexes = await secondaryIndexes(connection, 'login_activities');
    if (indexes.length) {
      await connection.query(
        `ALTER TABLE login_activities ${indexes.map((index) => `DROP INDEX \`${index.name}\``).join(', ')}`,
      );
    }

    const random = new SeededRandom(20261122);
    const spanMs = 90 * 86_400_000;
    const start = now.getTime() - spanMs;
    for (let from = 0; from < size.activities; from += ACTIVITIES_PER_LOAD) {
      const to = Math.min(size.activities, from + ACTIVITIES_PER_LOAD);
      pending = Readable.from(
        activityLines(from, to, (i) => {
          // Ascending in time as ids grow, as an append-only log is.
          const at = start + Math.floor(((i + random.next()) / size.activities) * spanMs);
          return activityRow(random, at, firstUserId, emails, organizations);
        }),
      );
      await connection.query(
        `LOAD DATA LOCAL INFILE 'login_activities.tsv' INTO TABLE login_activities
           CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\'
           LINES TERMINATED BY '\\n' (${ACTIVITY_COLUMNS.join(', ')})`,
      );
      pending = undefined;
      log(`activities: ${to} in ${seconds()}`);
    }

    if (indexes.length) {
      await connection.query(
        `ALTER TABLE login_activities ${indexes
          .map(
            (index) =>
              `ADD ${index.unique ? 'UNIQUE ' : ''}INDEX \`${index.name}\` (${index.columns.map((c) => `\`${c}\``).join(', ')})`,
          )
          .join(', ')}`,
      );
      log(`indexes rebuilt in ${seconds()}`);
    }
    await connection.query('ANALYZE TABLE organizations, roles, users, login_activities');
    await connection.query(
      'CREATE TABLE bench_loaded (users INT NOT NULL, activities INT NOT NULL, loaded_at DATETIME NOT NULL)',
    );
    await connection.query('INSERT INTO bench_loaded VALUES (?, ?, NOW())', [
      size.users,
      size.activities,
    ]);
    log(`loaded in ${seconds()}`);
  } finally {
    await connection.end();
  }
}

/** Tab-separated lines (as Buffers: mysql2 writes the chunks as they come) in LOAD DATA's default format (`\N` is NULL), a few thousand at a time. */
function* activityLines(
  from: number,
  to: number,
  row: (index: number) => unknown[],
): Generator<Buffer> {
  const lines: string[] = [];
  for (let i = from; i < to; i++) {
    lines.push(row(i).map(field).join('\t'));
    if (lines.length === 5000) {
      yield Buffer.from(`${lines.join('\n')}\n`);
      lines.length = 0;
    }
  }
  if (lines.length) yield Buffer.from(`${lines.join('\n')}\n`);
}

function field(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  return String(value).replace(/[\\\t\n]/g, (char) =>
    char === '\\' ? '\\\\' : char === '\t' ? '\\t' : '\\n',
  );
}
