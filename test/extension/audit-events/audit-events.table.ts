import { DataSource, Table, TableIndex } from 'typeorm';

/**
 * The module's table. A real module ships this as a migration in src/database/migrations; the
 * test creates it itself, with the same schema builder, on SQLite and on MySQL alike.
 */
export async function createAuditEventsTable(dataSource: DataSource): Promise<void> {
  const mysql = dataSource.options.type === 'mysql';
  const bigint = mysql ? 'bigint' : 'integer';
  const runner = dataSource.createQueryRunner();
  try {
    await runner.createTable(
      new Table({
        name: 'audit_events',
        columns: [
          {
            name: 'id',
            type: bigint,
            isPrimary: true,
            isGenerated: true,
            generationStrategy: 'increment',
          },
          { name: 'organization_id', type: bigint, isNullable: true },
          { name: 'actor_id', type: bigint, isNullable: true },
          { name: 'action', type: 'varchar', length: '64' },
          // A reserved word in both databases: the listing core quotes every column it names.
          { name: 'group', type: 'varchar', length: '32', default: "'ops'" },
          { name: 'created_at', type: 'datetime', precision: mysql ? 3 : undefined },
        ],
        indices: [
          // The listing names these (auditEventsListing.indexes).
          new TableIndex({
            name: 'ix_audit_events_org_id',
            columnNames: ['organization_id', 'id'],
          }),
          new TableIndex({ name: 'ix_audit_events_action', columnNames: ['action', 'id'] }),
          new TableIndex({ name: 'ix_audit_events_group', columnNames: ['group', 'id'] }),
          new TableIndex({ name: 'ix_audit_events_actor_id', columnNames: ['actor_id', 'id'] }),
          new TableIndex({
            name: 'ix_audit_events_created_at',
            columnNames: ['created_at', 'id'],
          }),
        ],
      }),
    );
  } finally {
    await runner.release();
  }
}
