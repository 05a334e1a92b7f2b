import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { rebuildSqliteTable } from './sqlite-table-rebuild';
import { createIndicesIfMissing, replaceIndex } from './resumable-steps';

/**
 * Every documented filter × sort read through an index in the sort's order (CONTRACT §3; the
 * listings name these in their `indexes`):
 * - the log's few-valued filters and `ip_address` newest first: (column, created_at, id);
 * - an organization's log, with any few-valued filter checked inside the index: the two
 *   organization indexes carry those columns after `id`, so the check reads no row.
 * - SQLite: users' `name` compares case-insensitively (NOCASE), as MySQL's collation does, so
 *   that one index serves both `q` (a LIKE prefix) and `sort=name`.
 */
const TIME_ORDERED = [
  'otp_required',
  'authentication_method',
  'oauth_provider',
  'failure_reason',
  'ip_address',
];
const OUTCOME_COLUMNS = [
  'success',
  'otp_required',
  'authentication_method',
  'oauth_provider',
  'failure_reason',
];

const timeOrdered = (column: string) =>
  new TableIndex({
    name: `ix_login_activities_${column}_created_at`,
    columnNames: [column, 'created_at', 'id'],
  });

const organizationIndexes = (wide: boolean) => [
  new TableIndex({
    name: 'ix_login_activities_org_id',
    columnNames: ['organization_id', 'id', ...(wide ? ['created_at', ...OUTCOME_COLUMNS] : [])],
  }),
  new TableIndex({
    name: 'ix_login_activities_org_created_at',
    columnNames: ['organization_id', 'created_at', 'id', ...(wide ? OUTCOME_COLUMNS : [])],
  }),
];

export class IndexPerFilterAndSort1764028800000 implements MigrationInterface {
  name = 'IndexPerFilterAndSort1764028800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndicesIfMissing(queryRunner, 'login_activities', TIME_ORDERED.map(timeOrdered));
    await this.replaceOrganizationIndexes(queryRunner, true);
    if (!this.isMysql(queryRunner)) await this.sqliteNameCollation(queryRunner, 'NOCASE');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (!this.isMysql(queryRunner)) await this.sqliteNameCollation(queryRunner, undefined);
    await this.replaceOrganizationIndexes(queryRunner, false);
    for (const column of TIME_ORDERED) {
      await queryRunner.dropIndex('login_activities', `ix_login_activities_${column}_created_at`);
    }
  }

  private async replaceOrganizationIndexes(queryRunner: QueryRunner, wide: boolean) {
    for (const index of organizationIndexes(wide)) {
      await replaceIndex(queryRunner, 'login_activities', index);
    }
  }

  /** SQLite: `name`'s collation, by a rebuild of `users`; the NOCASE index serves `q` without it. */
  private async sqliteNameCollation(queryRunner: QueryRunner, collation: 'NOCASE' | undefined) {
    if (collation) await queryRunner.query('DROP INDEX IF EXISTS ix_users_name_nocase');
    await rebuildSqliteTable(queryRunner, 'users', (table) =>
      table.replace(
        /"name" varchar\(255\)( COLLATE NOCASE)? NOT NULL/,
        `"name" varchar(255)${collation ? ` COLLATE ${collation}` : ''} NOT NULL`,
      ),
    );
    if (!collation) {
      await queryRunner.query(
        'CREATE INDEX IF NOT EXISTS ix_users_name_nocase ON users (name COLLATE NOCASE, id)',
      );
    }
  }

  private isMysql(queryRunner: QueryRunner): boolean {
    return queryRunner.connection.driver.options.type === 'mysql';
  }
}
