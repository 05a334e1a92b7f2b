import type { DataSource } from 'typeorm';

const TABLES = ['organizations', 'roles', 'users', 'login_activities', 'api_tokens'];

/**
 * Row count and a checksum of every row of every table, to show that requests changed nothing.
 * `api_tokens.last_used_at` is left out: recording use is the one write the service makes.
 */
export async function snapshotTables(dataSource: DataSource): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of TABLES) {
    const rows: Record<string, unknown>[] = await dataSource.query(
      `SELECT * FROM ${table} ORDER BY id`,
    );
    const normalized = rows.map((row) => {
      const copy: Record<string, unknown> = { ...row };
      if (table === 'api_tokens') delete copy.last_used_at;
      return JSON.stringify(copy, (_key, value) =>
        value instanceof Date ? value.toISOString() : value,
      );
    });
    const { createHash } = await import('node:crypto');
    out[table] =
      `${rows.length}:${createHash('sha256').update(normalized.join('\n')).digest('hex')}`;
  }
  return out;
}
