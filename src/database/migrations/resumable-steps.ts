import type { QueryRunner, TableIndex } from 'typeorm';

/*
 * DDL steps that find their work already done and pass it by. On MySQL/MariaDB each DDL statement
 * commits at once, so a migration stopped partway (a deploy killed during an index build) is run
 * again over its own work at the next start: each step must hold whether it ran before or not.
 * (Tables: `createTable(table, true)`; SQLite runs every migration in one transaction.)
 */

export async function createIndicesIfMissing(
  queryRunner: QueryRunner,
  table: string,
  indices: TableIndex[],
) {
  const loaded = await queryRunner.getTable(table);
  const existing = new Set(loaded?.indices.map((index) => index.name));
  const missing = indices.filter((index) => !existing.has(index.name));
  if (missing.length) await queryRunner.createIndices(table, missing);
}

/** `index` in place of the one of its name, unless that one already has its columns. */
export async function replaceIndex(queryRunner: QueryRunner, table: string, index: TableIndex) {
  const loaded = await queryRunner.getTable(table);
  const current = loaded?.indices.find((existing) => existing.name === index.name);
  if (current && current.columnNames.join() === index.columnNames.join()) return;
  if (current) await queryRunner.dropIndex(table, index.name!);
  await queryRunner.createIndex(table, index);
}
