import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { createIndicesIfMissing } from './resumable-steps';

/** How many leading characters `users.name_email_shared` compares: a longer `q` reads as 8. */
const SHARED_CHARS = 8;

/**
 * `users.name_email_shared`: how many leading characters name and e-mail share, up to 8, counting
 * only printable ASCII compared without case (where `LIKE` compares one character with one). A
 * row sharing at least `q`'s length matches `q` by name exactly when it does by e-mail, so `q`
 * sorted by e-mail reads its e-mail range in order and, of the name matches, only the rows sharing
 * less (few where e-mails are made from names), through `ix_users_name_unshared`; and the reverse
 * for `sort=name`. See docs/architecture.md ("q").
 */
export const USERS_UNSHARED_INDEXES = [
  new TableIndex({
    name: 'ix_users_name_unshared',
    columnNames: [
      'name_email_shared',
      'name',
      'id',
      'created_at',
      'updated_at',
      'role_id',
      'email',
    ],
  }),
  new TableIndex({
    name: 'ix_users_email_unshared',
    columnNames: ['name_email_shared', 'email', 'created_at', 'updated_at', 'role_id', 'name'],
  }),
];

const char = (column: string, at: number) => `SUBSTRING(\`${column}\`, ${at}, 1)`;
const lower = (column: string, at: number) => `CAST(LOWER(${char(column, at)}) AS BINARY)`;
const SHARED = Array.from({ length: SHARED_CHARS }, (_, i) => {
  const at = i + 1;
  const same = `ASCII(${char('name', at)}) BETWEEN 33 AND 126 AND ${lower('name', at)} = ${lower('email', at)}`;
  return `WHEN NOT (${same}) THEN ${i}`;
});
export const NAME_EMAIL_SHARED_EXPRESSION = `CASE ${SHARED.join(' ')} ELSE ${SHARED_CHARS} END`;

export class UsersNameEmailShared1764374400000 implements MigrationInterface {
  name = 'UsersNameEmailShared1764374400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // SQLite reads `q` with its OR optimization, not as a union of ranges: nothing to narrow.
    if (queryRunner.connection.options.type !== 'mysql') return;
    // Where TypeORM keeps a generated column's expression: it reads it back whenever it loads the
    // table (a later migration's createIndex on users, say), and fails without it.
    await queryRunner.query(
      'CREATE TABLE IF NOT EXISTS `typeorm_metadata` (`type` varchar(255) NOT NULL, ' +
        '`database` varchar(255) NULL, `schema` varchar(255) NULL, `table` varchar(255) NULL, ' +
        '`name` varchar(255) NULL, `value` text NULL) ENGINE=InnoDB',
    );
    const expression = NAME_EMAIL_SHARED_EXPRESSION;
    await queryRunner.query(
      "DELETE FROM `typeorm_metadata` WHERE `type` = 'GENERATED_COLUMN' AND `schema` = DATABASE() " +
        "AND `table` = 'users' AND `name` = 'name_email_shared'",
    );
    await queryRunner.query(
      'INSERT INTO `typeorm_metadata` (`type`, `schema`, `table`, `name`, `value`) ' +
        "VALUES ('GENERATED_COLUMN', DATABASE(), 'users', 'name_email_shared', ?)",
      [expression],
    );
    if (!(await queryRunner.hasColumn('users', 'name_email_shared'))) {
      await queryRunner.query(
        `ALTER TABLE users ADD COLUMN name_email_shared TINYINT UNSIGNED AS (${expression}) VIRTUAL`,
      );
    }
    await createIndicesIfMissing(queryRunner, 'users', USERS_UNSHARED_INDEXES);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'mysql') return;
    for (const index of USERS_UNSHARED_INDEXES) await queryRunner.dropIndex('users', index.name!);
    await queryRunner.query('ALTER TABLE users DROP COLUMN name_email_shared');
    await queryRunner.query(
      "DELETE FROM `typeorm_metadata` WHERE `type` = 'GENERATED_COLUMN' AND `schema` = DATABASE() " +
        "AND `table` = 'users' AND `name` = 'name_email_shared'",
    );
  }
}
