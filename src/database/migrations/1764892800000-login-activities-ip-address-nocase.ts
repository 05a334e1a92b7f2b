import { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildSqliteTable } from './sqlite-table-rebuild';

const PLAIN = '"ip_address" varchar(45) NOT NULL';
const NOCASE = '"ip_address" varchar(45) COLLATE NOCASE NOT NULL';

/**
 * SQLite: `ip_address` compares its hex digits (and an IPv6 zone) in any case, as MySQL's collation
 * does: an address a writer stored in capitals was found by no spelling of the filter there.
 */
export class LoginActivitiesIpAddressNocase1764892800000 implements MigrationInterface {
  name = 'LoginActivitiesIpAddressNocase1764892800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'mysql') return;
    await rebuildSqliteTable(queryRunner, 'login_activities', (sql) => sql.replace(PLAIN, NOCASE));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'mysql') return;
    await rebuildSqliteTable(queryRunner, 'login_activities', (sql) => sql.replace(NOCASE, PLAIN));
  }
}
