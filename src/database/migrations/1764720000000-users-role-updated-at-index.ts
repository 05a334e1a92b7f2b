import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { createIndicesIfMissing } from './resumable-steps';

/**
 * A role's users in the order they change: a middle page of `role_id=2&sort=updated_at` walked
 * the whole table's `updated_at` index past every other role's users (1M entries at 2M users).
 */
const ROLE_UPDATED_AT = new TableIndex({
  name: 'ix_users_role_updated_at',
  columnNames: ['role_id', 'updated_at', 'id'],
});

export class UsersRoleUpdatedAtIndex1764720000000 implements MigrationInterface {
  name = 'UsersRoleUpdatedAtIndex1764720000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndicesIfMissing(queryRunner, 'users', [ROLE_UPDATED_AT]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('users', ROLE_UPDATED_AT.name!);
  }
}
