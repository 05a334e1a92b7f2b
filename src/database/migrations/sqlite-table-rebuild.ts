import type { QueryRunner } from 'typeorm';

/**
 * SQLite changes a column's collation only by rebuilding its table: the CREATE TABLE as `edit`
 * rewrites it (nothing when that changes nothing), the rows copied, the indexes created again and
 * the AUTOINCREMENT counter kept (TypeORM's own rebuild drops a column's NOCASE). Nothing may
 * reference `table` by a key.
 */
export async function rebuildSqliteTable(
  queryRunner: QueryRunner,
  table: string,
  edit: (createTable: string) => string,
): Promise<void> {
  const [{ sql }]: { sql: string }[] = await queryRunner.query(
    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
    [table],
  );
  const edited = edit(sql);
  if (edited === sql) return; // already so
  const indexes: { sql: string }[] = await queryRunner.query(
    "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
    [table],
  );
  const sequence: { seq: number }[] = await queryRunner.query(
    'SELECT seq FROM sqlite_sequence WHERE name = ?',
    [table],
  );
  const rebuilt = `${table}_rebuilt`;
  await queryRunner.query(edited.replace(`CREATE TABLE "${table}"`, `CREATE TABLE "${rebuilt}"`));
  await queryRunner.query(`INSERT INTO "${rebuilt}" SELECT * FROM "${table}"`);
  await queryRunner.query(`DROP TABLE "${table}"`);
  await queryRunner.query(`ALTER TABLE "${rebuilt}" RENAME TO "${table}"`);
  for (const index of indexes) await queryRunner.query(index.sql);
  if (sequence.length) {
    await queryRunner.query('UPDATE sqlite_sequence SET seq = ? WHERE name = ?', [
      sequence[0].seq,
      table,
    ]);
  }
}
