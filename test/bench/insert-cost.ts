/**
 * I, the writer's cost (`--insert-cost --without-indexes ix_a,ix_b`, issue 26), on the table the
 * named indexes belong to. For users, the write is a user's change: 20k single-row UPDATEs in
 * autocommit setting a random user's role and `updated_at` (each moves the user in every index on
 * them), the touched rows written back to what they were after each measure. For login
 * activities, the time to append rows to the bench table in multi-row INSERTs, through one mysql2
 * connection in autocommit, with all its current indexes and again with the named secondary
 * indexes dropped. The rows are deleted again after each measure (DELETE WHERE id > the previous
 * maximum; the auto-increment counter is not reset), and the dropped indexes are added back
 * (timed: a build over the whole table) whatever happens, from their definitions as
 * information_schema.STATISTICS gave them before the drop. Then the measure with all indexes is
 * taken again: the first and the last bracket the one without, on a machine whose speed drifts.
 *
 * Random inserts split the full pages of the sorted-built indexes and the DELETE leaves them half
 * empty: three rounds of 100k rows grew the large set's index_length from 3.0 to 4.2 GiB, which
 * would slow every later run. The table is therefore rebuilt at the end (ALTER TABLE ... FORCE,
 * timed), which gives back the compact pages a load leaves (the same data_length and
 * index_length).
 */
import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';
import { ACTIVITY_COLUMNS, activityRow } from '../../src/database/seed/demo-data';
import { SeededRandom } from '../../src/database/seed/random';
import { addIndexClause, type IndexDefinition, secondaryIndexes } from './bench-database';

/** The log the inserts append to (a users index is measured by users' changes). */
const LOG = 'login_activities';

export interface IndexState {
  secondaryIndexes: number;
  /** information_schema.TABLES.INDEX_LENGTH (InnoDB's; a DROP or ADD INDEX updates it). */
  indexLengthBytes: number;
}

export interface InsertMeasure {
  indexes: IndexState;
  rows: number;
  seconds: number;
  rowsPerSec: number;
  microsPerRow: number;
  /** The DELETE that took the rows out again. */
  deleteSeconds: number;
}

export interface InsertCostResult {
  withoutIndexes: string[];
  batchSize: number;
  withAll: InsertMeasure;
  withoutNamed: InsertMeasure;
  /** With all indexes again, after they were added back. */
  withAllAgain: InsertMeasure;
  /** The mean of the two with-all measures' µs/row over withoutNamed's µs/row. */
  ratio: number;
  /** What the named indexes took before the drop (InnoDB's size statistic, pages). */
  namedIndexBytes: number;
  dropSeconds: number;
  /** The ALTER TABLE ADD INDEX that put the named indexes back. */
  rebuildSeconds: number;
  /** The ALTER TABLE FORCE that compacted the table again at the end. */
  compactSeconds: number;
  /** After the last measure (the inserts and deletes' page splits included). */
  beforeCompaction: IndexState;
  restored: IndexState;
}

const log = (message: string) => console.log(`[bench] I: ${message}`);

async function indexState(connection: Connection, table: string): Promise<IndexState> {
  const [[row]] = await connection.query<RowDataPacket[]>(
    `SELECT INDEX_LENGTH AS index_length FROM information_schema.TABLES
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`,
    [table],
  );
  return {
    secondaryIndexes: (await secondaryIndexes(connection, table)).length,
    indexLengthBytes: Number(row.index_length),
  };
}

/** The size of each of `names`, in bytes, as InnoDB's persistent statistics have it. */
async function indexBytes(connection: Connection, table: string, names: string[]): Promise<number> {
  const [[row]] = await connection.query<RowDataPacket[]>(
    `SELECT COALESCE(SUM(stat_value), 0) * @@innodb_page_size AS bytes FROM mysql.innodb_index_stats
      WHERE database_name = DATABASE() AND table_name = ? AND stat_name = 'size' AND index_name IN (?)`,
    [table, names],
  );
  return Number(row.bytes);
}

/** Waits (at most a minute) until InnoDB has purged what the last DELETE left behind. */
async function waitForPurge(connection: Connection): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const [[row]] = await connection.query<RowDataPacket[]>(
      `SELECT COUNT AS n FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'`,
    );
    if (!row || Number(row.n) < 1000) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** `count` realistic rows appended to the log now, as the writer would send them. */
async function prepareRows(connection: Connection, count: number): Promise<unknown[][]> {
  const [users] = await connection.query<RowDataPacket[]>(
    'SELECT id, email, organization_id FROM users ORDER BY id',
  );
  const emails = users.map((user) => String(user.email));
  const organizations = users.map((user) => Number(user.organization_id));
  const firstUserId = Number(users[0]?.id ?? 1);
  const random = new SeededRandom(26);
  const start = Date.now();
  return Array.from({ length: count }, (_, i) =>
    activityRow(random, start + i, firstUserId, emails, organizations),
  );
}

/** A measure's writes, timed, and what takes them back out (not timed as the writes are). */
interface Writes {
  rows: number;
  write(connection: Connection): Promise<void>;
  undo(connection: Connection): Promise<void>;
}

/** `rows` appended in `batchSize`-row INSERTs, deleted again. */
async function inserts(connection: Connection, rows: unknown[][], batchSize: number) {
  const [[max]] = await connection.query<RowDataPacket[]>(
    `SELECT COALESCE(MAX(id), 0) AS max_id FROM ${LOG}`,
  );
  const maxId = Number(max.max_id);
  const placeholders = `(${ACTIVITY_COLUMNS.map(() => '?').join(', ')})`;
  const statements = [] as string[];
  for (let offset = 0; offset < rows.length; offset += batchSize) {
    const batch = rows.slice(offset, offset + batchSize);
    statements.push(
      connection.format(
        `INSERT INTO ${LOG} (${ACTIVITY_COLUMNS.join(', ')}) VALUES ${batch.map(() => placeholders).join(', ')}`,
        batch.flat(),
      ),
    );
  }
  return {
    rows: rows.length,
    write: async () => {
      for (const sql of statements) await connection.query(sql);
    },
    undo: async () => void (await connection.query(`DELETE FROM ${LOG} WHERE id > ?`, [maxId])),
  } satisfies Writes;
}

/** `count` users' role and `updated_at` changed one UPDATE at a time, then written back. */
async function userChanges(connection: Connection, count: number): Promise<Writes> {
  const [[range]] = await connection.query<RowDataPacket[]>(
    'SELECT MIN(id) AS low, MAX(id) AS high FROM users',
  );
  const random = new SeededRandom(35);
  const ids = Array.from({ length: count }, () =>
    Math.floor(Number(range.low) + random.next() * (Number(range.high) - Number(range.low) + 1)),
  );
  const [before] = await connection.query<RowDataPacket[]>(
    'SELECT id, role_id, updated_at FROM users WHERE id IN (?)',
    [ids],
  );
  const [roles] = await connection.query<RowDataPacket[]>('SELECT id FROM roles');
  return {
    rows: count,
    write: async () => {
      for (const [i, id] of ids.entries()) {
        await connection.query('UPDATE users SET role_id = ?, updated_at = ? WHERE id = ?', [
          roles[i % roles.length].id,
          new Date(),
          id,
        ]);
      }
    },
    undo: async () => {
      for (const row of before) {
        await connection.query('UPDATE users SET role_id = ?, updated_at = ? WHERE id = ?', [
          row.role_id,
          row.updated_at,
          row.id,
        ]);
      }
    },
  };
}

async function measure(
  connection: Connection,
  table: string,
  writes: Writes,
  label: string,
): Promise<InsertMeasure> {
  const indexes = await indexState(connection, table);
  let seconds: number;
  let deleteSeconds: number;
  try {
    const started = performance.now();
    await writes.write(connection);
    seconds = (performance.now() - started) / 1000;
  } finally {
    const started = performance.now();
    await writes.undo(connection);
    deleteSeconds = (performance.now() - started) / 1000;
    await waitForPurge(connection);
  }
  const { rows } = writes;
  const result: InsertMeasure = {
    indexes,
    rows,
    seconds,
    rowsPerSec: rows / seconds,
    microsPerRow: (seconds * 1e6) / rows,
    deleteSeconds,
  };
  log(
    `${label} (${indexes.secondaryIndexes} secondary indexes, index_length ${mib(indexes.indexLengthBytes)}): ` +
      `${rows} rows in ${seconds.toFixed(2)} s = ${result.rowsPerSec.toFixed(0)} rows/s, ` +
      `${result.microsPerRow.toFixed(1)} µs/row; taken back in ${deleteSeconds.toFixed(2)} s`,
  );
  return result;
}

/** Adds back those of `named` the table lacks, in one ALTER; returns the seconds it took. */
async function addBack(
  connection: Connection,
  table: string,
  named: IndexDefinition[],
): Promise<number> {
  const present = new Set((await secondaryIndexes(connection, table)).map((i) => i.name));
  const missing = named.filter((i) => !present.has(i.name));
  if (!missing.length) return 0;
  const started = performance.now();
  await connection.query(`ALTER TABLE ${table} ${missing.map(addIndexClause).join(', ')}`);
  const seconds = (performance.now() - started) / 1000;
  log(`${missing.map((i) => i.name).join(', ')} added back in ${seconds.toFixed(1)} s`);
  return seconds;
}

/** A user's change is one statement: fewer than the log's rows keep the measure short. */
const USER_CHANGES = 20_000;

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

export async function benchInsertCost(
  databaseUrl: string,
  withoutIndexes: string[],
  rowCount = 100_000,
  batchSize = 1000,
): Promise<InsertCostResult> {
  const connection = await createConnection({ uri: databaseUrl });
  try {
    const [[owner]] = await connection.query<RowDataPacket[]>(
      `SELECT TABLE_NAME AS name FROM information_schema.STATISTICS
        WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = ? LIMIT 1`,
      [withoutIndexes[0]],
    );
    const table = owner ? String(owner.name) : LOG;
    const all = await secondaryIndexes(connection, table);
    const named = withoutIndexes.map((name) => {
      const index = all.find((i) => i.name === name);
      if (!index) {
        throw new Error(
          `--without-indexes: ${table} has no index ${name} (it has ${all.map((i) => i.name).join(', ')})`,
        );
      }
      return index;
    });
    const writes =
      table === 'users'
        ? await userChanges(connection, USER_CHANGES)
        : await inserts(connection, await prepareRows(connection, rowCount), batchSize);
    const namedIndexBytes = await indexBytes(connection, table, withoutIndexes);
    log(`${withoutIndexes.join(', ')}: ${mib(namedIndexBytes)} together`);

    let dropSeconds = 0;
    let rebuildSeconds = 0;
    let compactSeconds = 0;
    let withAll: InsertMeasure;
    let withoutNamed: InsertMeasure;
    let withAllAgain: InsertMeasure;
    let beforeCompaction: IndexState;
    try {
      withAll = await measure(connection, table, writes, 'with all indexes');
      try {
        const started = performance.now();
        await connection.query(
          `ALTER TABLE ${table} ${named.map((i) => `DROP INDEX \`${i.name}\``).join(', ')}`,
        );
        dropSeconds = (performance.now() - started) / 1000;
        withoutNamed = await measure(
          connection,
          table,
          writes,
          `without ${withoutIndexes.join(', ')}`,
        );
      } finally {
        // Whatever happened: every index the table had is there again.
        rebuildSeconds = await addBack(connection, table, named);
      }
      withAllAgain = await measure(connection, table, writes, 'with all indexes again');
    } finally {
      // Whatever happened: the pages the inserts split are compacted again.
      beforeCompaction = await indexState(connection, table);
      const started = performance.now();
      await connection.query(`ALTER TABLE ${table} FORCE`);
      compactSeconds = (performance.now() - started) / 1000;
    }
    const restored = await indexState(connection, table);
    log(
      `compacted again (ALTER TABLE FORCE) in ${compactSeconds.toFixed(1)} s: index_length ` +
        `${mib(beforeCompaction.indexLengthBytes)} before, ${mib(restored.indexLengthBytes)} after`,
    );
    const allMicros = (withAll.microsPerRow + withAllAgain.microsPerRow) / 2;
    const result: InsertCostResult = {
      withoutIndexes,
      batchSize,
      withAll,
      withoutNamed,
      withAllAgain,
      ratio: allMicros / withoutNamed.microsPerRow,
      namedIndexBytes,
      dropSeconds,
      rebuildSeconds,
      compactSeconds,
      beforeCompaction,
      restored,
    };
    log(
      `with all indexes ${withAll.microsPerRow.toFixed(1)} and ${withAllAgain.microsPerRow.toFixed(1)} µs/row, ` +
        `without ${withoutIndexes.length} ${withoutNamed.microsPerRow.toFixed(1)} µs/row: ${result.ratio.toFixed(2)}× ` +
        `(drop ${dropSeconds.toFixed(2)} s, add back ${rebuildSeconds.toFixed(1)} s; restored: ` +
        `${restored.secondaryIndexes} secondary indexes, index_length ${mib(restored.indexLengthBytes)})`,
    );
    return result;
  } finally {
    await connection.end();
  }
}
