import { MigrationInterface, QueryRunner, Table, TableColumnOptions, TableIndex } from 'typeorm';

/**
 * The five tables. Written with TypeORM's schema builder so that the same migration runs on
 * MySQL 8 / MariaDB and on the embedded SQLite default.
 */
export class InitialSchema1763769600000 implements MigrationInterface {
  name = 'InitialSchema1763769600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const mysql = queryRunner.connection.driver.options.type === 'mysql';
    // SQLite only auto-increments an `INTEGER PRIMARY KEY`, which is 64-bit there anyway.
    const id: TableColumnOptions = {
      name: 'id',
      type: mysql ? 'bigint' : 'integer',
      unsigned: mysql,
      isPrimary: true,
      isGenerated: true,
      generationStrategy: 'increment',
    };
    const ref = (name: string, isNullable = false): TableColumnOptions => ({
      name,
      type: mysql ? 'bigint' : 'integer',
      unsigned: mysql,
      isNullable,
    });
    const timestamp = (name: string, isNullable = false): TableColumnOptions => ({
      name,
      type: 'datetime',
      precision: mysql ? 3 : undefined,
      isNullable,
    });
    const text = (name: string, length: number, isNullable = false): TableColumnOptions => ({
      name,
      type: 'varchar',
      length: String(length),
      isNullable,
    });
    // E-mail lookups are case-insensitive: MySQL's *_ci collations already are, SQLite needs NOCASE.
    const email = (name: string): TableColumnOptions => ({
      ...text(name, 320),
      collation: mysql ? 'utf8mb4_unicode_ci' : 'NOCASE',
    });
    const flag = (name: string): TableColumnOptions => ({ name, type: 'boolean' });
    const tableOptions = mysql ? { engine: 'InnoDB' } : {};

    await queryRunner.createTable(
      new Table({
        name: 'organizations',
        columns: [id, text('name', 255), timestamp('created_at')],
        ...tableOptions,
      }),
      true,
    );
    await queryRunner.createTable(
      new Table({ name: 'roles', columns: [id, text('name', 100)], ...tableOptions }),
      true,
    );
    await queryRunner.createTable(
      new Table({
        name: 'users',
        columns: [
          id,
          text('name', 255),
          email('email'),
          ref('role_id'),
          ref('organization_id'),
          timestamp('created_at'),
          timestamp('updated_at'),
        ],
        foreignKeys: [
          { columnNames: ['role_id'], referencedTableName: 'roles', referencedColumnNames: ['id'] },
          {
            columnNames: ['organization_id'],
            referencedTableName: 'organizations',
            referencedColumnNames: ['id'],
          },
        ],
        indices: [
          new TableIndex({ name: 'uq_users_email', columnNames: ['email'], isUnique: true }),
          new TableIndex({ name: 'ix_users_org_id', columnNames: ['organization_id', 'id'] }),
          new TableIndex({ name: 'ix_users_role_id', columnNames: ['role_id', 'id'] }),
          new TableIndex({ name: 'ix_users_created_at', columnNames: ['created_at', 'id'] }),
          new TableIndex({ name: 'ix_users_updated_at', columnNames: ['updated_at', 'id'] }),
          new TableIndex({ name: 'ix_users_name', columnNames: ['name', 'id'] }),
        ],
        ...tableOptions,
      }),
      true,
    );
    await queryRunner.createTable(
      new Table({
        name: 'login_activities',
        columns: [
          id,
          email('user_email'),
          text('authentication_method', 32),
          text('oauth_provider', 32, true),
          text('ip_address', 45),
          flag('otp_required'),
          flag('success'),
          text('failure_reason', 64, true),
          text('user_agent', 512, true),
          timestamp('created_at'),
          ref('user_id', true),
          text('session_id', 128, true),
          ref('organization_id', true),
        ],
        // No foreign keys: the rows are written by another system and may name users that are
        // gone; the listing must still show them.
        indices: [
          new TableIndex({ name: 'ix_login_activities_user_id', columnNames: ['user_id', 'id'] }),
          new TableIndex({
            name: 'ix_login_activities_user_email',
            columnNames: ['user_email', 'id'],
          }),
          new TableIndex({
            name: 'ix_login_activities_org_id',
            columnNames: ['organization_id', 'id'],
          }),
          new TableIndex({
            name: 'ix_login_activities_created_at',
            columnNames: ['created_at', 'id'],
          }),
        ],
        ...tableOptions,
      }),
      true,
    );
    await queryRunner.createTable(
      new Table({
        name: 'api_tokens',
        columns: [
          id,
          text('name', 255),
          text('token_hash', 64),
          text('token_prefix', 16),
          text('scopes', 255),
          ref('organization_id', true),
          timestamp('expires_at', true),
          timestamp('revoked_at', true),
          timestamp('last_used_at', true),
          timestamp('created_at'),
        ],
        indices: [
          new TableIndex({
            name: 'uq_api_tokens_token_hash',
            columnNames: ['token_hash'],
            isUnique: true,
          }),
        ],
        ...tableOptions,
      }),
      true,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['api_tokens', 'login_activities', 'users', 'roles', 'organizations']) {
      await queryRunner.dropTable(table);
    }
  }
}
