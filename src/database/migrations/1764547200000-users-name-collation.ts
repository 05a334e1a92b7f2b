import { MigrationInterface, QueryRunner } from 'typeorm';

const COLLATION = 'utf8mb4_unicode_ci';

/**
 * `users.name` in the collation `email` has. It took the database's default, so `q` and
 * `sort=name` read names otherwise from one database to the next (MariaDB's default general_ci
 * reads `ß` as `s`, MySQL 8's 0900_ai_ci sorts otherwise) and otherwise than e-mails. Where it
 * changes the collation, MariaDB rebuilds the table online; a server that refuses to (MySQL may)
 * copies it, and writes to `users` wait meanwhile (README, Migrations).
 */
export class UsersNameCollation1764547200000 implements MigrationInterface {
  name = 'UsersNameCollation1764547200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'mysql') return;
    const [column]: { collation: string }[] = await queryRunner.query(
      'SELECT COLLATION_NAME AS collation FROM information_schema.COLUMNS ' +
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'users' AND COLUMN_NAME = 'name'",
    );
    // Already so in a database created in it: nothing to rebuild.
    if (column?.collation === COLLATION) return;
    const alter = `ALTER TABLE users MODIFY name VARCHAR(255) NOT NULL COLLATE ${COLLATION}`;
    try {
      await queryRunner.query(`${alter}, ALGORITHM=INPLACE, LOCK=NONE`);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !code.startsWith('ER_ALTER_OPERATION_NOT_SUPPORTED')) {
        throw error;
      }
      await queryRunner.query(alter);
    }
  }

  /** The collation it had is not known: the column stays in e-mail's. */
  async down(): Promise<void> {}
}
