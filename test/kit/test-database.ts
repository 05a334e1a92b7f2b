import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';

export type TestTarget = 'sqlite' | 'mysql';

/** `npm test` runs on the embedded default; `npm run test:mysql` sets DB_TEST_TARGET=mysql. */
export const testTarget: TestTarget = process.env.DB_TEST_TARGET === 'mysql' ? 'mysql' : 'sqlite';

export const MYSQL_SERVER_URL = process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/test';

export interface TestDatabase {
  target: TestTarget;
  /** Environment variables that point the app at this database. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/**
 * A throw-away database of its own: a temp SQLite file, or a fresh MySQL schema whose default
 * collation is `collation` (the one the service's text columns are in, unless set).
 */
export async function createTestDatabase(
  target: TestTarget = testTarget,
  { collation = 'utf8mb4_unicode_ci' }: { collation?: string } = {},
): Promise<TestDatabase> {
  if (target === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `listing-test-${process.pid}-`));
    return {
      target,
      env: { SQLITE_PATH: join(dir, 'test.sqlite') },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `listing_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const server = new URL(MYSQL_SERVER_URL);
  const admin = await createConnection({ uri: withDatabase(server, '').toString() });
  try {
    const charset = collation.split('_')[0];
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET ${charset} COLLATE ${collation}`);
  } finally {
    await admin.end();
  }
  return {
    target,
    env: { DATABASE_URL: withDatabase(server, name).toString() },
    drop: async () => {
      const connection = await createConnection({ uri: withDatabase(server, '').toString() });
      try {
        await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await connection.end();
      }
    },
  };
}

function withDatabase(server: URL, database: string): URL {
  const url = new URL(server.toString());
  url.pathname = `/${database}`;
  return url;
}
