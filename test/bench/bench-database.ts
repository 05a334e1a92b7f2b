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
  xl: { name: 'xl', users: 2_000_000, activities: 50_000_000 },
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
        `SELECT * FROM \`${name}\`.bench_loaded LIMIT 1`,
      );
      if (Number(loaded?.users) === size.users && Number(loaded?.activities) === size.activities) {
        log(
          `${name}: reusing ${size.users} users / ${size.activities} activities` +
            (loaded.phases
              ? ` (loaded ${String(loaded.loaded_at)}: ${String(loaded.phases)})`
              : ''),
        );
        await migrate(url); // picks up index migrations added since the load
        await logDiskUse(admin, name);
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
  const after = await createConnection({ uri: benchDatabaseUrl('') });
  try {
    await logDiskUse(after, name);
  } finally {
    await after.end();
  }
  return url;
}

/**
 * What the schema takes on disk, as InnoDB reports it (data_length + index_length of its tables,
 * estimates refreshed by ANALYZE): printed at the end of a load and on reuse.
 */
export async function schemaDiskBytes(
  connection: Connection,
  schema: string,
): Promise<{ total: number; tables: { name: string; data: number; index: number }[] }> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT TABLE_NAME AS name, DATA_LENGTH AS data, INDEX_LENGTH AS idx
       FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`,
    [schema],
  );
  const tables = rows.map((row) => ({
    name: String(row.name),
    data: Number(row.data),
    index: Number(row.idx),
  }));
  return { total: tables.reduce((sum, t) => sum + t.data + t.index, 0), tables };
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;

async function logDiskUse(connection: Connection, schema: string): Promise<void> {
  const { total, tables } = await schemaDiskBytes(connection, schema);
  const big = tables.filter((t) => t.name === 'users' || t.name === 'login_activities');
  log(
    `${schema}: ${gib(total)} on disk (data_length + index_length)` +
      big.map((t) => `; ${t.name} data ${gib(t.data)}, indexes ${gib(t.index)}`).join(''),
  );
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

export interface IndexDefinition {
  name: string;
  unique: boolean;
  columns: string[];
  /** Each column as an index definition writes it: quoted, with its prefix length and order. */
  parts: string[];
}

/** The secondary indexes of `table` as the migrations created them. */
export async function secondaryIndexes(
  connection: Connection,
  table: string,
): Promise<IndexDefinition[]> {
  const [rows] = await connection.query<RowDataPacket[]>(
    `SELECT INDEX_NAME AS name, NON_UNIQUE AS non_unique, COLUMN_NAME AS column_name,
            SUB_PART AS sub_part, COLLATION AS collation
       FROM information_schema.STATISTICS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'
      ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [table],
  );
  const byName = new Map<string, IndexDefinition>();
  for (const row of rows) {
    const name = String(row.name);
    const index = byName.get(name) ?? {
      name,
      unique: Number(row.non_unique) === 0,
      columns: [],
      parts: [],
    };
    index.columns.push(String(row.column_name));
    index.parts.push(
      `\`${String(row.column_name)}\`${row.sub_part === null ? '' : `(${Number(row.sub_part)})`}` +
        (row.collation === 'D' ? ' DESC' : ''),
    );
    byName.set(name, index);
  }
  return [...byName.values()];
}

/** The ALTER TABLE clause that adds `index` back as it was. */
export const addIndexClause = (index: IndexDefinition) =>
  `ADD ${index.unique ? 'UNIQUE ' : ''}INDEX \`${index.name}\` (${index.parts.join(', ')})`;

const ACTIVITIES_PER_LOAD = 500_000;

/**
 * Drops the secondary indexes of `table` that no foreign key needs (for each foreign-key column
 * the narrowest index leading with it stays) and returns the dropped ones' definitions.
 */
async function dropSecondaryIndexes(
  connection: Connection,
  table: string,
): Promise<IndexDefinition[]> {
  const indexes = await secondaryIndexes(connection, table);
  const [keys] = await connection.query<RowDataPacket[]>(
    `SELECT DISTINCT COLUMN_NAME AS column_name FROM information_schema.KEY_COLUMN_USAGE
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND REFERENCED_TABLE_NAME IS NOT NULL`,
    [table],
  );
  const kept = new Set<string>();
  for (const key of keys) {
    const leading = indexes
      .filter((index) => index.columns[0] === String(key.column_name))
      .sort((a, b) => a.columns.length - b.columns.length)[0];
    if (leading) kept.add(leading.name);
  }
  const dropped = indexes.filter((index) => !kept.has(index.name));
  if (dropped.length) {
    await connection.query(
      `ALTER TABLE \`${table}\` ${dropped.map((index) => `DROP INDEX \`${index.name}\``).join(', ')}`,
    );
  }
  return dropped;
}

async function addIndexes(
  connection: Connection,
  table: string,
  indexes: IndexDefinition[],
): Promise<void> {
  if (!indexes.length) return;
  await connection.query(`ALTER TABLE \`${table}\` ${indexes.map(addIndexClause).join(', ')}`);
}

/** The users' e-mails and organization ids in id order (activityRow picks from them). */
async function userPicks(
  connection: Connection,
): Promise<{ firstUserId: number; emails: string[]; organizations: number[] }> {
  const [users] = await connection.query<RowDataPacket[]>(
    'SELECT id, email, organization_id FROM users ORDER BY id',
  );
  return {
    firstUserId: Number(users[0]?.id ?? 1),
    emails: users.map((user) => String(user.email)),
    organizations: users.map((user) => Number(user.organization_id)),
  };
}

/**
 * Schema through the real migrations; organizations and users through the demo seeder (its
 * batched INSERTs, about 2000 rows each, take a few minutes for 2M users) while the users'
 * secondary indexes other than those the foreign keys need are dropped; login activity, the big
 * table, streamed with LOAD DATA LOCAL INFILE in chunks while its secondary indexes are dropped.
 * Each table's indexes are then rebuilt in one ALTER (a sorted build, far quicker than millions of
 * random index inserts into a buffer pool they do not fit) and the tables analyzed. How long each
 * phase took goes to the log and to bench_loaded.phases.
 */
async function load(url: string, size: BenchSize): Promise<void> {
  const started = Date.now();
  let phaseStarted = started;
  const phases: Record<string, number> = {};
  const now = new Date();
  const seconds = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  /** Ends the phase `name`: its seconds go to `phases`, the log says how long it and all took. */
  const phase = (name: string, what: string) => {
    const now = Date.now();
    phases[name] = Math.round((now - phaseStarted) / 100) / 10;
    phaseStarted = now;
    log(`${what} in ${phases[name].toFixed(1)} s (${seconds()} in all)`);
  };

  let pending: Readable | undefined;
  const connection = await createConnection({
    uri: url,
    infileStreamFactory: () => {
      if (!pending) throw new Error('no LOAD DATA stream prepared');
      return pending;
    },
  });
  try {
    const dataSource = await openBenchDataSource(url);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
      const userIndexes = await dropSecondaryIndexes(connection, 'users');
      phase('schema', `schema migrated, ${userIndexes.length} users indexes dropped`);
      await seedDemoData(dataSource, { users: size.users, activities: 0, batchSize: 2000, now });
      phase('users', `users: ${size.users}`);
      await addIndexes(connection, 'users', userIndexes);
      phase('userIndexes', `users: ${userIndexes.length} indexes rebuilt`);
    } finally {
      await dataSource.destroy();
    }

    await connection.query('SET SESSION unique_checks = 0, foreign_key_checks = 0');
    const { firstUserId, emails, organizations } = await userPicks(connection);
    const indexes = await dropSecondaryIndexes(connection, 'login_activities');

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
      log(`activities: ${to} of ${size.activities} loaded (${seconds()} in all)`);
    }
    phase('activities', `activities: ${size.activities}`);

    await addIndexes(connection, 'login_activities', indexes);
    phase('activityIndexes', `activities: ${indexes.length} indexes rebuilt`);
    await connection.query('ANALYZE TABLE organizations, roles, users, login_activities');
    phase('analyze', 'tables analyzed');
    phases.total = Math.round((Date.now() - started) / 100) / 10;
    await connection.query(
      `CREATE TABLE bench_loaded (users INT NOT NULL, activities INT NOT NULL,
         loaded_at DATETIME NOT NULL, phases VARCHAR(1000) NULL)`,
    );
    await connection.query('INSERT INTO bench_loaded VALUES (?, ?, NOW(), ?)', [
      size.users,
      size.activities,
      JSON.stringify(phases),
    ]);
    log(`loaded in ${seconds()}: ${JSON.stringify(phases)} (seconds)`);
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
