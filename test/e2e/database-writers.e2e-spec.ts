import { createConnection } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { startTestApp, TestApp, testTarget } from '../kit';

/**
 * Other processes write the database while the service reads it (the platform, `npm run seed`,
 * the token CLI): a writer holding a lock the service's one write (a token's last use) needs
 * holds up none of its requests. On SQLite that is the file's write lock, taken in the one thread
 * every request is served on; on MySQL/MariaDB a lock on the tokens' rows.
 */
describe('the database, written by another process meanwhile', () => {
  let kit: TestApp;

  afterEach(() => kit?.close());

  /** A transaction of another connection holding what recording a token's use must wait for. */
  const holdWriteLock = async (): Promise<() => Promise<void>> => {
    if (testTarget === 'sqlite') {
      const writer = new DataSource({
        type: 'better-sqlite3',
        database: kit.database.env.SQLITE_PATH,
      });
      await writer.initialize();
      await writer.query('BEGIN IMMEDIATE');
      await writer.query('DELETE FROM login_activities WHERE id = -1');
      return async () => {
        await writer.query('ROLLBACK');
        await writer.destroy();
      };
    }
    const writer = await createConnection({ uri: kit.database.env.DATABASE_URL });
    await writer.query('BEGIN');
    await writer.query('SELECT id FROM api_tokens FOR UPDATE');
    return async () => {
      await writer.query('ROLLBACK');
      await writer.end();
    };
  };

  it("keeps answering while another connection holds the lock a token's first use must write under", async () => {
    kit = await startTestApp();
    // Never used: its first request records its last use, a write.
    const token = await kit.token();
    const release = await holdWriteLock();
    try {
      const started = performance.now();
      for (let i = 0; i < 4; i++) {
        await kit
          .http()
          .get('/v1/users?limit=1')
          .set('Authorization', `Bearer ${token}`)
          .expect(200);
      }
      // Waiting for the lock in the thread that serves them, they would wait as long.
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      await release();
    }
  });

  // A lock on a table no request needs: on MySQL/MariaDB only, where statements wait for locks.
  if (testTarget === 'mysql') {
    it('answers from a pool of one while another session locks a table the request does not read', async () => {
      kit = await startTestApp({ env: { DB_POOL_SIZE: '1', TAIL_HOLDBACK_MS: '1000' } });
      const api = await kit.client({ scopes: ['login_activities:read'] });
      await api.get('/v1/login_activities?limit=1').expect(200);
      const locker = await createConnection({ uri: kit.database.env.DATABASE_URL });
      await locker.query('LOCK TABLES users WRITE');
      try {
        // The background read of the users' highest id meets the lock meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 2500));
        for (let i = 0; i < 3; i++) await api.get('/v1/login_activities?limit=1').expect(200);
      } finally {
        await locker.end();
      }
    });
  }
});
