import {
  createTestDatabase,
  eventually,
  MYSQL_SERVER_URL,
  startTestApp,
  TcpProxy,
  TestApp,
  TestDatabase,
  testTarget,
} from '../kit';
import { REFUSED_PORT } from '../kit/processes';
import { DEMO_DATA_SIZE } from '../../src/database/demo-data.bootstrap';

/** The names `/v1/users` lists for `token` (a 200 is expected). */
async function listedNames(kit: TestApp, token: string): Promise<string[]> {
  const users = await kit.as(token).get('/v1/users').expect(200);
  return users.body.data.map((user: { name: string }) => user.name);
}

/**
 * A dependency that is down when the service boots (the usual order in a cluster restart) does
 * not keep it from listening: liveness answers, readiness names what is down, /v1 answers 503
 * with Retry-After, and the service serves once the dependency answers, without a restart.
 */
describe('dependencies down at boot', () => {
  // Each database its own case: a server that may be unreachable, or the embedded file.
  const onMysql = (name: string, test: () => Promise<void>, timeoutMs?: number) =>
    testTarget === 'mysql' && it(name, test, timeoutMs);
  const onSqlite = (name: string, test: () => Promise<void>) =>
    testTarget === 'sqlite' && it(name, test);

  onMysql(
    'listens with the database unreachable, answers 503, and serves once it answers',
    async () => {
      const database = await createTestDatabase();
      const server = new URL(MYSQL_SERVER_URL);
      const proxy = new TcpProxy(server.hostname, Number(server.port || 3306));
      const url = new URL(database.env.DATABASE_URL);
      url.host = `127.0.0.1:${await proxy.start()}`;
      await proxy.stop(); // the database is unreachable when the app boots
      let kit: TestApp | undefined;
      try {
        // Migrations pending: they run in the background once the database answers.
        kit = await startTestApp({ database, env: { DATABASE_URL: url.toString() } });
        const http = kit.http;

        await http().get('/health/live').expect(200);
        const ready = await http().get('/health/ready').expect(503);
        expect(ready.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(ready.body.detail).toMatch(/^Not ready: database is down \(ECONNREFUSED\)/);

        for (const bearer of ['Bearer lsk_not_looked_up', undefined]) {
          const request = http().get('/v1/users');
          if (bearer) request.set('Authorization', bearer);
          const down = await request.expect(503);
          expect(down.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(down.headers['retry-after']).toMatch(/^\d+$/);
          expect(down.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
          expect(JSON.stringify(down.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
        }

        await proxy.start(); // the database comes up: no restart of the app
        const up = await eventually(
          () => http().get('/health/ready'),
          (response) => response.status === 200,
          15_000,
        );
        expect(up.status).toBe(200);
        // Migrated meanwhile: tokens and listings work.
        const token = await kit.token({ scopes: ['users:read'] });
        await kit.data.user({ name: 'After the outage' });
        expect(await listedNames(kit, token)).toEqual(['After the outage']);
      } finally {
        await kit?.close();
        await proxy.stop();
        await database.drop();
      }
    },
    60_000,
  );

  onMysql(
    'listens with the read replica unreachable: ready, listings from the primary, the replica checked once it answers',
    async () => {
      const database = await createTestDatabase();
      const server = new URL(MYSQL_SERVER_URL);
      // The "replica" is the shared server behind a proxy that is down at boot (it replicates
      // nothing: once it answers, its check says so; test/e2e/read-replicas has a real one).
      const proxy = new TcpProxy(server.hostname, Number(server.port || 3306));
      const replicaUrl = new URL(database.env.DATABASE_URL);
      replicaUrl.host = `127.0.0.1:${await proxy.start()}`;
      await proxy.stop();
      let kit: TestApp | undefined;
      try {
        kit = await startTestApp({
          database,
          env: { DATABASE_REPLICA_URLS: replicaUrl.toString(), TOKEN_CACHE_TTL_MS: '0' },
        });
        const token = await kit.token({ scopes: ['users:read'] });
        await kit.data.user({ name: 'On the primary' });
        const http = kit.http;
        const replica = async () =>
          (await http().get('/health/ready').expect(200)).body.info.replicas.replica0;
        expect(await eventually(replica, (r) => r.reason === 'down', 5000)).toMatchObject({
          in_rotation: false,
          reason: 'down',
        });
        expect(await listedNames(kit, token)).toEqual(['On the primary']);

        await proxy.start();
        expect(await eventually(replica, (r) => r.reason === 'not_a_replica', 5000)).toMatchObject({
          in_rotation: false,
          reason: 'not_a_replica',
        });
      } finally {
        await kit?.close();
        await proxy.stop();
        await database.drop();
      }
    },
    60_000,
  );

  /** `test` on an app of its own with `env`, on a fresh database dropped afterwards. */
  async function onFreshDatabase(
    env: (database: TestDatabase) => Record<string, string>,
    test: (kit: TestApp) => Promise<void>,
  ) {
    const database = await createTestDatabase();
    let kit: TestApp | undefined;
    try {
      kit = await startTestApp({ database, env: env(database) });
      await test(kit);
    } finally {
      await kit?.close();
      await database.drop();
    }
  }

  onMysql('with ssl=true connects over TLS or not at all (this server has no TLS)', () =>
    onFreshDatabase(
      (database) => ({ DATABASE_URL: `${database.env.DATABASE_URL}?ssl=true` }),
      async (kit) => {
        const ready = await kit.http().get('/health/ready').expect(503);
        expect(ready.body.detail).toMatch(
          /^Not ready: database is down \(HANDSHAKE_NO_SSL_SUPPORT\)/,
        );
        await kit.http().get('/v1/users').set('Authorization', 'Bearer x').expect(503);
      },
    ),
  );

  onMysql('is not ready while migrations are pending, and serves once they are applied', () =>
    onFreshDatabase(
      () => ({ DB_MIGRATIONS_RUN: 'false' }),
      async (kit) => {
        const ready = await kit.http().get('/health/ready').expect(503);
        expect(ready.body.detail).toMatch(/^Not ready: database is down \(migrations_pending\)/);
        const down = await kit.http().get('/v1/users').set('Authorization', 'Bearer x').expect(503);
        expect(down.headers['retry-after']).toMatch(/^\d+$/);
        expect(down.body.detail).toContain('migrations_pending');
        await kit.dataSource.runMigrations();
        await eventually(
          async () => (await kit.http().get('/health/ready')).status,
          (status) => status === 200,
        );
        const token = await kit.token();
        await kit.as(token).get('/v1/users').expect(200);
      },
    ),
  );

  onSqlite(
    'ends boot naming the migrations a file has not run, with DB_MIGRATIONS_RUN=false',
    async () => {
      const database = await createTestDatabase();
      try {
        await expect(
          startTestApp({ database, env: { DB_MIGRATIONS_RUN: 'false' } }),
        ).rejects.toThrow(/migration\(s\) not applied \(InitialSchema\d+, .*npm run migration:run/);
      } finally {
        await database.drop();
      }
    },
  );

  onSqlite('on the embedded default, migrates and seeds the demo data before serving', async () => {
    const kit = await startTestApp({ env: { SEED_DEMO_DATA: 'true' } });
    try {
      // The first request after boot already sees the demo data: nothing is left to the background.
      await kit.http().get('/health/ready').expect(200);
      const token = await kit.token({ scopes: ['users:read'] });
      const users = await kit
        .http()
        .get('/v1/users?limit=1')
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      expect(users.headers['x-total-count']).toBe(String(DEMO_DATA_SIZE.users));
    } finally {
      await kit.close();
    }
  });

  it('listens with Redis unreachable: readiness stays up and says why, listings serve on local state', async () => {
    const kit = await startTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${REFUSED_PORT}` } });
    try {
      await kit.http().get('/health/live').expect(200);
      const ready = await kit.http().get('/health/ready').expect(200);
      // Why, as for the database: the connection's own error code, not a bare "error".
      expect(ready.body.info.redis).toMatchObject({ reachable: false, reason: 'ECONNREFUSED' });
      const again = await kit.http().get('/health/ready').expect(200);
      expect(again.body.info.redis).toMatchObject({ reachable: false, reason: 'ECONNREFUSED' });
      const token = await kit.token({ scopes: ['users:read'] });
      await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);
    } finally {
      await kit.close();
    }
  });
});
