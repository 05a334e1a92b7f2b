import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  NAME_EMAIL_SHARED_EXPRESSION,
  USERS_UNSHARED_INDEXES,
} from './1764374400000-users-name-email-shared';

/**
 * `users.name_email_shared` STORED rather than VIRTUAL: on MariaDB 10.11 a filesort over its
 * indexes (`q` within an organization, sorted by name or e-mail) left out matching users once one
 * of them had been updated. One ALTER: the table is rebuilt once, and a migration stopped partway
 * has changed nothing.
 */
export class UsersNameEmailSharedStored1765411200000 implements MigrationInterface {
  name = 'UsersNameEmailSharedStored1765411200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await this.generate(queryRunner, 'STORED');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await this.generate(queryRunner, 'VIRTUAL');
  }

  private async generate(queryRunner: QueryRunner, kind: 'STORED' | 'VIRTUAL'): Promise<void> {
    if (queryRunner.connection.options.type !== 'mysql') return;
    const [column] = await queryRunner.query(
      'SELECT EXTRA AS extra FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() ' +
        "AND TABLE_NAME = 'users' AND COLUMN_NAME = 'name_email_shared'",
    );
    if (!column || String(column.extra).toUpperCase().startsWith(kind)) return;
    const indexes = USERS_UNSHARED_INDEXES.map(
      ({ name, columnNames }) =>
        `ADD INDEX \`${name}\` (${columnNames.map((c) => `\`${c}\``).join(', ')})`,
    );
    await queryRunner.query(
      'ALTER TABLE users ' +
        [
          ...USERS_UNSHARED_INDEXES.map(({ name }) => `DROP INDEX \`${name}\``),
          'DROP COLUMN name_email_shared',
          `ADD COLUMN name_email_shared TINYINT UNSIGNED AS (${NAME_EMAIL_SHARED_EXPRESSION}) ${kind}`,
          ...indexes,
        ].join(', '),
    );
  }
}
