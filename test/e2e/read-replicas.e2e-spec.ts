import { DataSource } from 'typeorm';
import { ConfigError, loadConfig } from '../../src/config/app-config';
import { buildDataSourceOptions } from '../../src/database/data-source-options';
import {
  createTestDatabase,
  DataFactory,
  startTestApp,
  TestApp,
  TestDatabase,
  testTarget,
} from '../kit';

/**
 * DATABASE_REPLICA_URLS on MariaDB, shown honestly: the "replica" is a second database holding
 * different rows than the primary, so every answer tells which one served it.
 */
if (testTarget === 'sqlite') {
  // The embedded database has no replicas: the configuration refuses them without a primary.
  describe('read replicas (embedded SQLite)', () => {
    it('are refused without a MySQL primary', () => {
      const env = { DATABASE_REPLICA_URLS: 'mysql://reader@replica:3306/listing' };
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(
        'DATABASE_REPLICA_URLS: needs DATABASE_URL (the primary) to be set',
      );
    });
  });
} else {
  describe('read replicas (MariaDB)', () => {
    let primaryDb: TestDatabase;
    let replicaDb: TestDatabase;
    let replica: DataSource;
    let kit: TestApp;
    let token: string;
    let tokenId: number;

    beforeAll(async () => {
      primaryDb = await createTestDatabase('mysql');
      replicaDb = await createTestDatabase('mysql');
      // The replica gets the schema through the same migrations, on its own connection.
      replica = new DataSource(
        buildDataSourceOptions(
          loadConfig({ ...replicaDb.env, DB_MIGRATIONS_RUN: 'true', NODE_ENV: 'test' }),
        ),
      );
      await replica.initialize();

      kit = await startTestApp({
        database: primaryDb,
        env: { DATABASE_REPLICA_URLS: replicaDb.env.DATABASE_URL, TOKEN_CACHE_TTL_MS: '0' },
      });
      expect(kit.config.database.replicaUrls).toHaveLength(1);

      // The token is created on the primary (as the CLI does) and "replicated" row for row.
      ({ id: tokenId, token } = await kit.tokenWithId({
        scopes: ['users:read', 'login_activities:read'],
      }));
      const [row] = await kit.dataSource.query('SELECT * FROM api_tokens WHERE id = ?', [tokenId]);
      const columns = Object.keys(row);
      await replica.query(
        `INSERT INTO api_tokens (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
        Object.values(row),
      );

      await kit.data.user({ name: 'Only on the primary' });
      const onReplica = new DataFactory(replica);
      const user = await onReplica.user({ name: 'Only on the replica' });
      await onReplica.loginActivity({ user, user_agent: 'replica-agent' });
    });
    afterAll(async () => {
      await kit?.close();
      await replica?.destroy();
      await primaryDb?.drop();
      await replicaDb?.drop();
    });

    const get = (path: string, bearer = token) =>
      kit.http().get(path).set('Authorization', `Bearer ${bearer}`);

    it('serves listings from the replica', async () => {
      const users = await get('/v1/users').expect(200);
      expect(users.body.data.map((user: { name: string }) => user.name)).toEqual([
        'Only on the replica',
      ]);
      expect(users.headers['x-total-count']).toBe('1');

      const activities = await get('/v1/login_activities').expect(200);
      expect(activities.body.data).toEqual([
        expect.objectContaining({ user_agent: 'replica-agent' }),
      ]);
    });

    it('looks tokens up on the primary: a new token works and a revocation holds at once', async () => {
      // Issued on the primary only, not (yet) replicated: the replica does not know it.
      const primaryOnly = await kit.tokenWithId({ scopes: ['users:read'] });
      await get('/v1/users', primaryOnly.token).expect(200);
      // Revoked on the primary while the replica, lagging, still holds the token unrevoked.
      const [row] = await kit.dataSource.query('SELECT * FROM api_tokens WHERE id = ?', [
        primaryOnly.id,
      ]);
      await replica.query(
        `INSERT INTO api_tokens (${Object.keys(row).join(', ')}) VALUES (${Object.keys(row)
          .map(() => '?')
          .join(', ')})`,
        Object.values(row),
      );
      await kit.dataSource.query('UPDATE api_tokens SET revoked_at = NOW() WHERE id = ?', [
        primaryOnly.id,
      ]);
      await get('/v1/users', primaryOnly.token).expect(401);
    });

    it('writes last_used_at to the primary only', async () => {
      await get('/v1/users').expect(200);
      const lastUsed = async (source: DataSource) =>
        (await source.query('SELECT last_used_at FROM api_tokens WHERE id = ?', [tokenId]))[0]
          .last_used_at as Date | null;
      const deadline = Date.now() + 5000;
      while ((await lastUsed(kit.dataSource)) === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(await lastUsed(kit.dataSource)).toBeInstanceOf(Date);
      expect(await lastUsed(replica)).toBeNull();
    });

    it('reports queries by target in the metrics and checks the replica for readiness', async () => {
      const metrics = (await kit.http().get('/metrics').expect(200)).text;
      expect(metrics).toMatch(/^db_queries_total\{target="replica",outcome="ok"\} [1-9]/m);
      expect(metrics).toMatch(/^db_pool_connections_max\{pool="replica0"\} \d+/m);
      expect(metrics).toMatch(/^db_pool_connections_max\{pool="primary"\} \d+/m);
      await kit.http().get('/health/ready').expect(200);
    });
  });
}
