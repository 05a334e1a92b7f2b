import { DataSource, Table, TableIndex } from 'typeorm';

/** The module's table, created by the test (a real module ships it as a migration). */
export async function createAnnouncementsTable(dataSource: DataSource): Promise<void> {
  const mysql = dataSource.options.type === 'mysql';
  const runner = dataSource.createQueryRunner();
  try {
    await runner.createTable(
      new Table({
        name: 'announcements',
        columns: [
          {
            name: 'id',
            type: mysql ? 'bigint' : 'integer',
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          { name: 'title', type: 'varchar', length: '200' },
          { name: 'created_at', type: 'datetime', precision: mysql ? 3 : undefined },
          { name: 'updated_at', type: 'datetime', precision: mysql ? 3 : undefined },
        ],
        indices: [
          new TableIndex({
            name: 'ix_announcements_created_at',
            columnNames: ['created_at', 'id'],
          }),
          // The changing timestamp's index, as the guide has one made: it carries no other column.
          new TableIndex({
            name: 'ix_announcements_updated_at',
            columnNames: ['updated_at', 'id'],
          }),
        ],
      }),
    );
  } finally {
    await runner.release();
  }
}
