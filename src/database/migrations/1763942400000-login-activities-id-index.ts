import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';
import { createIndicesIfMissing } from './resumable-steps';

/**
 * A narrow index on `login_activities.id` alone. Unfiltered pages in id order (the default)
 * otherwise walk the clustered primary key, i.e. whole rows: at millions of rows that no longer
 * fits the buffer pool and a deep page reads gigabytes. This index holds only ids, so a deep
 * OFFSET walks a small fraction of those bytes (the listing repository asks for it by name).
 */
export class LoginActivitiesIdIndex1763942400000 implements MigrationInterface {
  name = 'LoginActivitiesIdIndex1763942400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndicesIfMissing(queryRunner, 'login_activities', [
      new TableIndex({ name: 'ix_login_activities_id', columnNames: ['id'] }),
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropIndex('login_activities', 'ix_login_activities_id');
  }
}
