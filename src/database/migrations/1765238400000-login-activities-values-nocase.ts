import { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildSqliteTable } from './sqlite-table-rebuild';

const COLUMNS = [
  [
    '"authentication_method" varchar(32) NOT NULL',
    '"authentication_method" varchar(32) COLLATE NOCASE NOT NULL',
  ],
  ['"oauth_provider" varchar(32),', '"oauth_provider" varchar(32) COLLATE NOCASE,'],
  ['"failure_reason" varchar(64),', '"failure_reason" varchar(64) COLLATE NOCASE,'],
] as const;

/**
 * SQLite: the few-valued texts (`authentication_method`, `oauth_provider`, `failure_reason`)
 * compare in any case, as MySQL's collation does: a value a writer stored in other capitals
 * (`OAuth`) was found by `authentication_method=oauth` there and not here.
 */
export class LoginActivitiesValuesNocase1765238400000 implements MigrationInterface {
  name = 'LoginActivitiesValuesNocase1765238400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'mysql') return;
    await rebuildSqliteTable(queryRunner, 'login_activities', (sql) =>
      COLUMNS.reduce((edited, [plain, nocase]) => edited.replace(plain, nocase), sql),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'mysql') return;
    await rebuildSqliteTable(queryRunner, 'login_activities', (sql) =>
      COLUMNS.reduce((edited, [plain, nocase]) => edited.replace(nocase, plain), sql),
    );
  }
}
