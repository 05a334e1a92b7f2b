import { MigrationInterface, QueryRunner } from 'typeorm';

const TABLES = ['organizations', 'roles', 'users', 'login_activities', 'api_tokens'];
const COLLATION = 'utf8mb4_unicode_ci';

/**
 * Text columns in utf8mb4 whatever the database's default: in a latin1 database (MariaDB's own
 * default) a filter value latin1 cannot hold, such as `session_id=Ω`, failed the statement ("Illegal
 * mix of collations"), a 500. Only columns in another character set change, each table rebuilt
 * once (a copy: writes to it wait meanwhile); a utf8mb4 database has nothing to change.
 */
export class TextColumnsUtf8mb41765065600000 implements MigrationInterface {
  name = 'TextColumnsUtf8mb41765065600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'mysql') return;
    const columns: { table: string; column: string; type: string; nullable: string }[] =
      await queryRunner.query(
        'SELECT TABLE_NAME AS `table`, COLUMN_NAME AS `column`, COLUMN_TYPE AS `type`, ' +
          'IS_NULLABLE AS nullable FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() ' +
          `AND TABLE_NAME IN (${TABLES.map(() => '?').join(', ')}) AND DATA_TYPE = 'varchar' ` +
          "AND CHARACTER_SET_NAME <> 'utf8mb4' AND EXTRA NOT LIKE '%GENERATED%' " +
          'ORDER BY TABLE_NAME, ORDINAL_POSITION',
        TABLES,
      );
    for (const table of TABLES) {
      const modified = columns
        .filter((column) => column.table === table)
        .map(
          ({ column, type, nullable }) =>
            `MODIFY \`${column}\` ${type} CHARACTER SET utf8mb4 COLLATE ${COLLATION} ` +
            (nullable === 'YES' ? 'NULL' : 'NOT NULL'),
        );
      if (modified.length)
        await queryRunner.query(`ALTER TABLE \`${table}\` ${modified.join(', ')}`);
    }
  }

  /** The character sets they had are not known: the columns stay in utf8mb4. */
  async down(): Promise<void> {}
}
