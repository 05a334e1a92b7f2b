import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { createIndicesIfMissing } from './resumable-steps';

/**
 * Indexes so that every filter and sort of the listings (CONTRACT §3) is served by an index, on
 * its own and under the organization scope of org-limited tokens (`organization_id = ?` AND the
 * filter, ORDER BY the sort column, id). The listing first reads only ids from these tables, so
 * each index below also covers that read (InnoDB appends the primary key to every secondary index,
 * SQLite the rowid; `id` is still named so that the order of ties is explicit on both).
 *
 * Kept from the initial schema: `users` (organization_id, id), (role_id, id), (created_at, id),
 * (updated_at, id), (name, id), unique (email); `login_activities` (user_id, id),
 * (user_email, id), (organization_id, id), (created_at, id). None of them is superseded: each is
 * the one that walks its filter in the default `id` order (or its sort column unscoped).
 */
const USERS_INDEXES = [
  // Scoped tokens sorting by a column: `organization_id = ? ORDER BY column, id`.
  new TableIndex({
    name: 'ix_users_org_created_at',
    columnNames: ['organization_id', 'created_at', 'id'],
  }),
  new TableIndex({
    name: 'ix_users_org_updated_at',
    columnNames: ['organization_id', 'updated_at', 'id'],
  }),
  new TableIndex({ name: 'ix_users_org_name', columnNames: ['organization_id', 'name', 'id'] }),
  new TableIndex({ name: 'ix_users_org_email', columnNames: ['organization_id', 'email'] }),
];

const LOGIN_ACTIVITIES_INDEXES = [
  // Scoped tokens reading the log by time.
  new TableIndex({
    name: 'ix_login_activities_org_created_at',
    columnNames: ['organization_id', 'created_at', 'id'],
  }),
  // "This user's (or this e-mail's) attempts in the last 24 hours, newest first": a range on
  // created_at within one user, already in order.
  new TableIndex({
    name: 'ix_login_activities_user_id_created_at',
    columnNames: ['user_id', 'created_at', 'id'],
  }),
  new TableIndex({
    name: 'ix_login_activities_user_email_created_at',
    columnNames: ['user_email', 'created_at', 'id'],
  }),
  // One per remaining filter, in the default id order. The few-valued ones (success,
  // otp_required, authentication_method) are not selective, but they make the total a covering
  // index count and the page an ordered index walk instead of a table scan.
  ...[
    'success',
    'otp_required',
    'authentication_method',
    'oauth_provider',
    'failure_reason',
    'ip_address',
    'session_id',
  ].map(
    (column) =>
      new TableIndex({ name: `ix_login_activities_${column}`, columnNames: [column, 'id'] }),
  ),
];

/** SQLite only: `q` matches names case-insensitively, which needs a NOCASE index there. */
const SQLITE_USERS_NAME_NOCASE = 'ix_users_name_nocase';

export class ListingIndexes1763856000000 implements MigrationInterface {
  name = 'ListingIndexes1763856000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndicesIfMissing(queryRunner, 'users', USERS_INDEXES);
    await createIndicesIfMissing(queryRunner, 'login_activities', LOGIN_ACTIVITIES_INDEXES);
    if (queryRunner.connection.driver.options.type !== 'mysql') {
      // MySQL's name column already has a case-insensitive collation, so (name, id) serves the
      // LIKE there. SQLite compares it with BINARY; LIKE is case-insensitive and can only use an
      // index whose collation is NOCASE. The schema builder cannot give one column a collation.
      await queryRunner.query(
        `CREATE INDEX IF NOT EXISTS ${SQLITE_USERS_NAME_NOCASE} ON users (name COLLATE NOCASE, id)`,
      );
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.driver.options.type !== 'mysql') {
      await queryRunner.query(`DROP INDEX ${SQLITE_USERS_NAME_NOCASE}`);
    }
    for (const index of LOGIN_ACTIVITIES_INDEXES) {
      await queryRunner.dropIndex('login_activities', index.name!);
    }
    for (const index of USERS_INDEXES) await queryRunner.dropIndex('users', index.name!);
  }
}
