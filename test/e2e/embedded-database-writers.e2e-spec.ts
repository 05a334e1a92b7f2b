import { DataSource } from 'typeorm';
import { startTestApp, TestApp, testTarget } from '../kit';

/**
 * The embedded default's file is written by other processes (the platform, `npm run seed`, the
 * token CLI) while the service reads it: a writer holding the file's lock holds up none of its
 * requests.
 */
describe('the embedded database, written by another process meanwhile', () => {
  let kit: TestApp;
  const onSqlite = (name: string, test: () => Promise<void>) =>
    testTarget === 'sqlite' && it(name, test);

  afterEach(() => kit?.close());

  onSqlite("keeps answering while another connection holds the file's write lock", async () => {
    kit = await startTestApp();
    // Never used: its first request records its last use, a write.
    const token = await kit.token();
    const writer = new DataSource({
      type: 'better-sqlite3',
      database: kit.database.env.SQLITE_PATH,
    });
    await writer.initialize();
    await writer.query('BEGIN IMMEDIATE');
    await writer.query('DELETE FROM login_activities WHERE id = -1');
    try {
      const started = performance.now();
      for (let i = 0; i < 4; i++) {
        await kit
          .http()
          .get('/v1/users?limit=1')
          .set('Authorization', `Bearer ${token}`)
          .expect(200);
      }
      // Waiting for the lock, the one thread would serve nothing for as long as it waits.
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      await writer.query('ROLLBACK');
      await writer.destroy();
    }
  });
});
