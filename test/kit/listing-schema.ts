import { DiscoveryService } from '@nestjs/core';
import type { ListingDefinition } from '../../src/common/listing/listing-definition';
import { listingRepositories } from '../../src/common/listing/listing.repository';
import type { TestApp } from './test-app';

/** The definitions of the listings the app serves, found as its warm-up finds them. */
export const servedListings = (kit: TestApp): ListingDefinition[] =>
  listingRepositories(kit.app.get(DiscoveryService)).map((repository) => repository.definition);

/**
 * What the database's schema lacks for `definition`: a sort column that may be NULL (a keyset
 * step compares with it, and a NULL matches no comparison: the walk would skip those rows), an
 * index the definition names that the table does not have, or a text column sorted or filtered
 * in its collation that does not ignore case (`NOCASE` on SQLite, `_ci` on MySQL): the two
 * databases would answer with other rows, in another order.
 */
export async function listingSchemaProblems(
  kit: TestApp,
  definition: ListingDefinition,
): Promise<string[]> {
  const { table } = definition;
  const mysql = kit.dataSource.options.type === 'mysql';
  const [created]: { sql: string }[] = mysql
    ? []
    : await kit.dataSource.query(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
        [table],
      );
  const columns: { name: string; nullable: boolean; text: boolean; ignoresCase: boolean }[] = mysql
    ? (
        (await kit.dataSource.query(
          `SELECT COLUMN_NAME AS name, IS_NULLABLE AS nullable, COLLATION_NAME AS collation
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`,
          [table],
        )) as { name: string; nullable: string; collation: string | null }[]
      ).map((c) => ({
        name: c.name,
        nullable: c.nullable === 'YES',
        text: c.collation !== null,
        ignoresCase: /_ci$/.test(c.collation ?? ''),
      }))
    : (
        (await kit.dataSource.query(`PRAGMA table_info(\`${table}\`)`)) as {
          name: string;
          type: string;
          notnull: number;
          pk: number;
        }[]
      ).map((c) => ({
        name: c.name,
        nullable: c.notnull === 0 && c.pk === 0,
        text: /char|text|clob/i.test(c.type),
        ignoresCase: new RegExp(`"${c.name}"[^,]*\\sCOLLATE\\s+NOCASE\\b`, 'i').test(
          created?.sql ?? '',
        ),
      }));
  if (columns.length === 0) return [`${table}: no such table`];
  const indexes = new Set(
    (
      (await kit.dataSource.query(
        mysql ? `SHOW INDEX FROM \`${table}\`` : `PRAGMA index_list(\`${table}\`)`,
      )) as { Key_name?: string; name?: string }[]
    ).map((row) => String(row.Key_name ?? row.name)),
  );
  const problems: string[] = [];
  for (const column of new Set(['id', ...definition.sortableColumns])) {
    const found = columns.find((c) => c.name === column);
    if (!found) problems.push(`${table}.${column}: sortable, but no such column`);
    else if (found.nullable) problems.push(`${table}.${column}: sortable, but may be NULL`);
  }
  // Compared in the collation: sorted, or filtered by equality or prefix, unless byte for byte or
  // one of a few values the parameter accepts (written as it spells them).
  const filters = Object.values(definition.filters);
  const compared = new Set([
    ...definition.sortableColumns.filter(
      (column) => !filters.some((f) => f.column === column && f.values),
    ),
    ...filters
      .filter((f) => (f.operator === 'equals' && !f.exact && !f.values) || f.operator === 'prefix')
      .flatMap((f) => f.columns ?? [f.column]),
  ]);
  for (const column of compared) {
    const found = columns.find((c) => c.name === column);
    if (found?.text && !found.ignoresCase) {
      problems.push(
        `${table}.${column}: compared as text, but case matters in its collation (${mysql ? 'not _ci' : 'not NOCASE'})`,
      );
    }
  }
  const named = definition.indexes.flatMap(({ index }) => index?.split(',') ?? []);
  for (const index of new Set(named)) {
    if (index !== 'PRIMARY' && !indexes.has(index)) {
      problems.push(`${table}: the definition names index ${index}, which the table lacks`);
    }
  }
  return problems;
}
