import { createConnection } from 'mysql2';
import type { DataSource } from 'typeorm';

/** How long the version may take to come: a connection of its own, then one statement. */
const VERSION_TIMEOUT_MS = 2000;

/**
 * The server's version (undefined on SQLite), asked on a connection of its own and destroyed at
 * the bound. Asked on the pool, it could wait behind a statement that a query timed out on
 * TypeORM's path left queued on its connection, with no bound running, and every request with it.
 */
export function serverVersion(dataSource: DataSource): Promise<string | undefined> {
  if (dataSource.options.type !== 'mysql') return Promise.resolve(undefined);
  const { url, ssl } = dataSource.options as { url?: string; ssl?: { rejectUnauthorized: true } };
  return new Promise((resolve, reject) => {
    const connection = createConnection({ uri: url, ssl, connectTimeout: VERSION_TIMEOUT_MS });
    // Its failures reach the query's callback; a late one after the bound has nowhere to go.
    connection.on('error', () => undefined);
    const timer = setTimeout(() => {
      connection.destroy();
      const error = new Error('the database did not say its version in time');
      reject(Object.assign(error, { code: 'PROTOCOL_SEQUENCE_TIMEOUT' }));
    }, VERSION_TIMEOUT_MS);
    connection.query('SELECT VERSION() AS version', (error, rows) => {
      clearTimeout(timer);
      connection.destroy();
      if (error) reject(error);
      else resolve(String((rows as { version?: unknown }[])[0]?.version ?? ''));
    });
  });
}
