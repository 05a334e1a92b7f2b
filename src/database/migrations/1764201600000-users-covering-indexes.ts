import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { createIndicesIfMissing } from './resumable-steps';

/**
 * One index per users sort that carries every other filtered column after `sort, id`: any
 * unscoped filter set is then checked inside the index on a walk in the sort's order, and a time
 * window's matches are sorted by another column without reading a row (2M users: a 30-day window
 * sorted by `updated_at` went from 80k row lookups to 80k index entries). The narrow (sort, id)
 * indexes stay: unfiltered deep pages walk them, a quarter of the width.
 */
const USERS_COVERING_INDEXES = [
  new TableIndex({
    name: 'ix_users_created_at_cover',
    columnNames: ['created_at', 'id', 'updated_at', 'role_id', 'name', 'email'],
  }),
  new TableIndex({
    name: 'ix_users_updated_at_cover',
    columnNames: ['updated_at', 'id', 'created_at', 'role_id', 'name', 'email'],
  }),
  new TableIndex({
    name: 'ix_users_name_cover',
    columnNames: ['name', 'id', 'created_at', 'updated_at', 'role_id', 'email'],
  }),
  // E-mails are unique: the order needs no `id` to break ties.
  new TableIndex({
    name: 'ix_users_email_cover',
    columnNames: ['email', 'created_at', 'updated_at', 'role_id', 'name'],
  }),
];

export class UsersCoveringIndexes1764201600000 implements MigrationInterface {
  name = 'UsersCoveringIndexes1764201600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndicesIfMissing(queryRunner, 'users', USERS_COVERING_INDEXES);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const index of USERS_COVERING_INDEXES) await queryRunner.dropIndex('users', index.name!);
  }
}
