import { createConnection } from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { drainAndClose } from '../../src/shutdown';
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

/**
 * While the database cannot be reached, readiness answers 503 and every /v1 request answers a
 * prompt 503 problem+json with Retry-After (never a hang, never a 500); liveness stays 200.
 * When the database returns, the service serves again without a restart.
 */
describe('database outage', () => {
  let kit: TestApp;
  let database: TestDatabase;
  let token: string;
  // MariaDB: a TCP proxy between the app and the server is stopped (connections dropped, new ones
  // refused) and started again. SQLite has no connection to lose: its data source is destroyed
  // and initialized again, which shows the mapping to 503 but not the self-healing pool.
  let proxy: TcpProxy | undefined;

  const cutOff = async () => {
    if (proxy) await proxy.stop();
    else await kit.app.get(DataSource).destroy();
  };
  const restore = async () => {
    if (proxy) await proxy.start();
    else await kit.app.get(DataSource).initialize();
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    const env: Record<string, string> = {
      TOKEN_CACHE_TTL_MS: '0',
      COUNT_CACHE_TTL_MS: '0',
      // On MySQL every query is also bounded on the client at this plus 2 s.
      DB_STATEMENT_TIMEOUT_MS: '1000',
    };
    if (testTarget === 'mysql') {
      const server = new URL(MYSQL_SERVER_URL);
      proxy = new TcpProxy(server.hostname, Number(server.port || 3306));
      const url = new URL(database.env.DATABASE_URL);
      url.host = `127.0.0.1:${await proxy.start()}`;
      env.DATABASE_URL = url.toString();
    }
    kit = await startTestApp({ database, env, captureLogs: true });
    await kit.data.user({ name: 'Still here' });
    token = await kit.token({ scopes: ['users:read'] });
  });
  afterAll(async () => {
    await kit.close();
    await proxy?.stop();
    await database.drop();
  });

  const listUsers = () => kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`);

  it('answers 503 while the database is gone and recovers by itself', async () => {
    await listUsers().expect(200);
    await kit.http().get('/health/ready').expect(200);

    await cutOff();

    const ready = await kit.http().get('/health/ready').expect(503);
    expect(ready.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(ready.body.detail).toMatch(/^Not ready: database is down/);
    await kit.http().get('/health/live').expect(200);
    for (let i = 0; i < 3; i++) {
      const res = await listUsers().set('X-Request-Id', `outage-${i}`).expect(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|SELECT/);
    }

    // The request line of a 503 is at error level; the cause was logged once by the filter.
    expect(
      await kit.waitForLog(
        (line) => line.msg === 'GET 503' && JSON.stringify(line).includes('outage-0'),
      ),
    ).toMatchObject({
      level: 50,
      route: '/v1/users',
      res: { status: 503 },
    });
    expect(
      kit.logs().filter((line) => 'err' in line && JSON.stringify(line).includes('outage-')),
    ).toEqual([]);
    // The filter's line names the request, so it can be matched with the request's own line.
    const cause = kit
      .logs()
      .find(
        (line) =>
          String(line.msg).startsWith('database unavailable') &&
          (line.req as { id?: string } | undefined)?.id === 'outage-1',
      );
    expect(cause).toMatchObject({ level: 40, context: 'ProblemDetails' });

    await restore();

    const back = await listUsers().expect(200);
    expect(back.body.data).toEqual([expect.objectContaining({ name: 'Still here' })]);
    await kit.http().get('/health/ready').expect(200);
  });

  if (testTarget === 'mysql') {
    it('answers 503 when the database goes silent, instead of waiting forever', async () => {
      await listUsers().expect(200);
      proxy!.freeze();

      const res = await listUsers().expect(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      await kit.http().get('/health/ready').expect(503);
      // TypeORM's slow-query note goes to the JSON log, without the query's parameters.
      const slow = await kit.waitForLog((line) => String(line.msg).startsWith('slow query'));
      expect(slow).toMatchObject({ level: 40, context: 'Database' });
      expect(kit.logText()).not.toContain('PARAMETERS');

      await proxy!.stop();
      await proxy!.start();
      await listUsers().expect(200);
    });

    /**
     * An app through the proxy with one connection, a 1 s limit (a 3 s client-side bound), and
     * `env`: a request takes the connection the previous one gave up on, or a new one.
     */
    const appOnOneConnection = (env: Record<string, string>) =>
      startTestApp({
        database,
        env: {
          DATABASE_URL: kit.config.database.url!,
          DB_STATEMENT_TIMEOUT_MS: '1000',
          DB_POOL_SIZE: '1',
          ...env,
        },
        captureLogs: true,
      });

    /** Text statements (not prepared), so that each carries its SQL; a count with each page. */
    const appCountingEachPage = () =>
      appOnOneConnection({ DB_PREPARED_STATEMENTS: '0', COUNT_CACHE_TTL_MS: '0' });

    /** `GET /v1/users<query>` on `app` with a users:read token, the client waiting up to 15 s. */
    const usersOf = async (app: TestApp) => {
      const token = await app.token({ scopes: ['users:read'] });
      return (query = '') =>
        app.http().get(`/v1/users${query}`).set('Authorization', `Bearer ${token}`).timeout(15_000);
    };

    it('answers by the limit when statements, each within it, add up past it', async () => {
      const app = await appCountingEachPage();
      try {
        const list = await usersOf(app);
        await list().expect(200);
        // The count and the page each held 700 ms on their way: 1.4 s in all, the limit 1 s.
        proxy!.delayNext('FROM `users`', 700, 2);
        const started = Date.now();
        const reply = await list().expect(503);
        expect(Date.now() - started).toBeLessThan(1300);
        expect(reply.headers['retry-after']).toMatch(/^\d+$/);
        await list().expect(200);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('answers at the limit when a statement is held on its way, and logs no slow query for it', async () => {
      const app = await appOnOneConnection({ DB_PREPARED_STATEMENTS: '0' });
      try {
        const list = await usersOf(app);
        await list().expect(200);
        // The page (its total cached) never reaches the server before the limit: it answers then,
        // while its KILL stops nothing and its connection is dropped (the client's bound is 3 s).
        proxy!.delayNext('FROM `users`', 5000);
        let started = Date.now();
        await list().expect(503);
        expect(Date.now() - started).toBeLessThan(1250);
        // A transaction's end held likewise (a first count, with its page): dropped with its
        // connection at the limit.
        proxy!.delayNext('COMMIT', 5000);
        started = Date.now();
        await list('?role_id=1').expect(503);
        expect(Date.now() - started).toBeLessThan(1250);
        await new Promise((resolve) => setTimeout(resolve, 3500 - (Date.now() - started)));
        expect(app.logText()).not.toContain('slow query');
        await list().expect(200);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('answers at the limit when a token’s look-up is held on its way', async () => {
      const app = await appOnOneConnection({ DB_PREPARED_STATEMENTS: '0' });
      try {
        const token = await app.token({ scopes: ['users:read'] });
        // Never looked up yet: the guard's look-up, before the request's deadline is set, is held.
        proxy!.delayNext('FROM api_tokens', 5000);
        const started = Date.now();
        const reply = await app
          .http()
          .get('/v1/users')
          .set('Authorization', `Bearer ${token}`)
          .timeout(15_000)
          .expect(503);
        expect(Date.now() - started).toBeLessThan(1250);
        expect(reply.headers['retry-after']).toMatch(/^\d+$/);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('bounds the look-up of the narrow id index as any statement of the read', async () => {
      const app = await appOnOneConnection({ RATE_LIMIT_PER_MINUTE: '0' });
      try {
        await app.data.rows('login_activities', 400, (i) => ({
          user_email: `narrow${i}@example.com`,
          authentication_method: 'password',
          ip_address: '192.0.2.1',
          otp_required: false,
          success: true,
          created_at: new Date(Date.UTC(2026, 5, 1, 0, 0, 0, i)),
        }));
        const cached = await app.token({ scopes: ['login_activities:read'] });
        const list = (page: number) =>
          app
            .http()
            .get(`/v1/login_activities?limit=10&page=${page}`)
            .set('Authorization', `Bearer ${cached}`);
        await list(1).expect(200);
        // Asked once per listing, by the first page walked along the ids past the start: held
        // past the client's bound (the limit plus 2 s), then delivered.
        proxy!.delayNext('information_schema.STATISTICS', 10_000);
        const started = Date.now();
        await list(25).timeout(15_000).expect(503);
        expect(Date.now() - started).toBeLessThan(1250);
        // The connection it held was dropped, not handed to the next request behind it.
        const next = Date.now();
        await list(2).timeout(15_000).expect(200);
        expect(Date.now() - next).toBeLessThan(4500);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('serves a request waiting for the one connection once the request holding it stops at its limit', async () => {
      // Every request counts its total with its page, in a snapshot.
      const app = await appOnOneConnection({ COUNT_CACHE_TTL_MS: '0' });
      try {
        const list = await usersOf(app);
        await list().expect(200);
        // The first's snapshot is held on its way: it stops at its limit (1 s), not at the
        // client's bound (the limit plus 2 s), and gives the connection up then.
        proxy!.delayNext('START TRANSACTION', 10_000);
        const began = Date.now();
        const holding = list().then((reply) => [reply.status, Date.now() - began]);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const started = Date.now();
        // Other criteria: a count of its own, not the first one's shared.
        await list('?q=Still').expect(200);
        expect(Date.now() - started).toBeLessThan(1500);
        const [status, took] = await holding;
        expect(status).toBe(503);
        expect(took).toBeLessThan(1500);
        await list().expect(200);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('asks the server its version under a bound, never behind a statement left on its connection', async () => {
      // Held past the client's bound: asked on TypeORM's path, the question stayed queued on the
      // one connection after it timed out, and the next one waited behind it with no bound running.
      proxy!.delayNext('VERSION()', 12_000);
      const app = await appOnOneConnection({});
      try {
        const cached = await app.token({ scopes: ['users:read'] });
        const replies: { status: number; ms: number }[] = [];
        for (let i = 0; i < 4; i++) {
          const started = Date.now();
          const { status } = await app
            .http()
            .get('/v1/users')
            .set('Authorization', `Bearer ${cached}`)
            .timeout(30_000);
          replies.push({ status, ms: Date.now() - started });
        }
        // The first gives up at the question's own bound (1 s) and drops the connection.
        expect(Math.max(...replies.map(({ ms }) => ms))).toBeLessThan(2500);
        expect(replies.at(-1)!.status).toBe(200);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('answers 503 when the database account may open no more connections, and serves on its one', async () => {
      const user = `one_conn_${process.pid}`;
      await kit.dataSource.query(
        `CREATE USER '${user}'@'127.0.0.1' IDENTIFIED BY 'one-pw' WITH MAX_USER_CONNECTIONS 1`,
      );
      const url = new URL(database.env.DATABASE_URL);
      await kit.dataSource.query(
        `GRANT ALL ON \`${url.pathname.slice(1)}\`.* TO '${user}'@'127.0.0.1'`,
      );
      url.username = user;
      url.password = 'one-pw';
      url.hostname = '127.0.0.1';
      const app = await startTestApp({
        database,
        env: { DATABASE_URL: url.toString(), DB_POOL_SIZE: '2', DB_STATEMENT_TIMEOUT_MS: '1000' },
      });
      const locker = await createConnection({ uri: database.env.DATABASE_URL });
      try {
        const list = await usersOf(app);
        // Its version asked on the pool's one connection, not on one more. A request that meets
        // the tail watch's statement on it asks for a second (503), as a busy machine shows.
        const served = () =>
          eventually(
            async () => (await list()).status,
            (s) => s === 200,
          );
        expect(await served()).toBe(200);
        // The one connection waits on the lock; the next request's second is refused (1203).
        await locker.query('LOCK TABLES users WRITE');
        const statuses = (await Promise.all([list(), list()])).map(({ status }) => status);
        expect(statuses).toEqual([503, 503]);
        await locker.query('UNLOCK TABLES');
        expect(await served()).toBe(200);
      } finally {
        await locker.end();
        await app.close();
        await kit.dataSource.query(`DROP USER '${user}'@'127.0.0.1'`);
      }
    }, 60_000);

    it('shuts down at once after a request stopped at its limit while its count is held', async () => {
      // Every request counts with its page; the count is stopped with the request and its
      // connection dropped after it answered: the pool closes once that is done, not before.
      const app = await appCountingEachPage();
      try {
        const list = await usersOf(app);
        await list().expect(200);
        proxy!.delayNext('FROM `users`', 5000);
        await list().expect(503);
        const started = Date.now();
        const code = await Promise.race([
          drainAndClose(app.app, 8000, 'test'),
          new Promise((resolve) => setTimeout(() => resolve('still closing'), 10_000)),
        ]);
        expect(code).toBe(0);
        expect(Date.now() - started).toBeLessThan(3000);
      } finally {
        await app.close().catch(() => undefined);
      }
    }, 60_000);

    it('stops a background recount at shutdown instead of waiting for it, and starts nothing after', async () => {
      // A total past its refresh-ahead point is recounted in the background, held here far past
      // the shutdown period; the tail watch's polls (every tenth of the hold-back) go on meanwhile.
      const app = await appOnOneConnection({
        DB_POOL_SIZE: '2',
        COUNT_CACHE_TTL_MS: '4000',
        COUNT_CACHE_WARMUP: 'false',
        DB_PREPARED_STATEMENTS: '0',
        TAIL_HOLDBACK_MS: '400',
      });
      try {
        await app.ready(); // id walks answer once the newest ids have settled
        const list = await usersOf(app);
        await list().expect(200);
        await new Promise((resolve) => setTimeout(resolve, 2300));
        proxy!.delayNext('COUNT(*)', 15_000);
        await list().expect(200);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const logged = app.logText().length;
        const started = Date.now();
        const closing = drainAndClose(app.app, 8000, 'test');
        // A poll sent once the stops have begun would hold the pools' close.
        setTimeout(() => proxy!.delayNext('AS max_id', 15_000, 10), 30);
        expect(await closing).toBe(0);
        expect(Date.now() - started).toBeLessThan(3000);
        // Nothing worth a warning: the stops are the shutdown's own.
        expect(app.logText().slice(logged)).not.toMatch(/"level":(40|50)/);
      } finally {
        proxy!.cancelDelays(); // the polls not sent: no later test's statement is held
        await app.close().catch(() => undefined);
      }
    }, 60_000);

    it('gives its Redis count lock up at shutdown: another instance counts that total at once', async () => {
      // A background recount holds the lock; stopped with its app, it publishes nothing.
      const env = {
        REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
        COUNT_CACHE_TTL_MS: '3000',
        COUNT_CACHE_WARMUP: 'false',
        DB_PREPARED_STATEMENTS: '0',
      };
      const app = await appOnOneConnection({ ...env, DB_POOL_SIZE: '2' });
      const other = await appOnOneConnection(env);
      try {
        const list = await usersOf(app);
        const listOther = await usersOf(other);
        await list().expect(200);
        const published = Date.now();
        await new Promise((resolve) => setTimeout(resolve, 1700));
        proxy!.delayNext('COUNT(*)', 15_000);
        await list().expect(200);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(await drainAndClose(app.app, 8000, 'test')).toBe(0);
        // Once the published total has expired, the other counts it: within the lock's 5 s
        // otherwise, waiting for a total nobody will publish.
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(0, published + 3200 - Date.now())),
        );
        const started = Date.now();
        await listOther().expect(200);
        expect(Date.now() - started).toBeLessThan(1500);
      } finally {
        await app.close().catch(() => undefined);
        await other.close();
      }
    }, 60_000);

    it('closes within the period while a readiness probe and a token’s last use are held', async () => {
      // The probe runs on TypeORM's own path, outside the app's statement runners.
      const app = await appOnOneConnection({ DB_POOL_SIZE: '3', DB_PREPARED_STATEMENTS: '0' });
      try {
        const list = await usersOf(app);
        proxy!.delayNext('SELECT 1', 15_000);
        await app.http().get('/health/ready').expect(503);
        proxy!.delayNext('SET last_used_at', 15_000);
        await list().expect(200);
        const logged = app.logText().length;
        const started = Date.now();
        expect(await drainAndClose(app.app, 8000, 'test')).toBe(0);
        expect(Date.now() - started).toBeLessThan(3000);
        expect(app.logText().slice(logged)).not.toMatch(/"level":(40|50)/);
      } finally {
        await app.close().catch(() => undefined);
      }
    }, 60_000);

    it('closes within the period while its migrations check is held at boot', async () => {
      // The check gives up at its client bound and leaves its connection, free, with the statement
      // still queued on it.
      proxy!.delayNext('SELECT name FROM', 15_000);
      const app = await appOnOneConnection({ DB_POOL_SIZE: '3', DB_MIGRATIONS_RUN: 'false' });
      try {
        await app.http().get('/health/ready').timeout(15_000).expect(503);
        // Its retry (a quarter second on) is queued behind the held statement on that connection.
        await app.waitForLog((line) => String(line.msg).startsWith('database not available'));
        await new Promise((resolve) => setTimeout(resolve, 600));
        const started = Date.now();
        expect(await drainAndClose(app.app, 8000, 'test')).toBe(0);
        expect(Date.now() - started).toBeLessThan(3000);
      } finally {
        await app.close().catch(() => undefined);
      }
    }, 60_000);

    it('announces no retry for a connection attempt that fails once shutdown has begun', async () => {
      // The database never answers: the boot's attempt ends at its connect timeout, after the close.
      proxy!.freeze();
      try {
        const app = await appOnOneConnection({});
        try {
          const logged = app.logText().length;
          expect(await drainAndClose(app.app, 8000, 'test')).toBe(0);
          // Past the attempt's 5 s connect timeout, counted from the boot.
          await new Promise((resolve) => setTimeout(resolve, 6000));
          expect(app.logText().slice(logged)).not.toContain('retrying in the background');
        } finally {
          await app.close().catch(() => undefined);
        }
      } finally {
        await proxy!.stop();
        await proxy!.start();
      }
    }, 60_000);

    it('answers readiness with what is down when the database is slow, not the request limit', async () => {
      const app = await appOnOneConnection({});
      try {
        await app.http().get('/health/ready').expect(200);
        proxy!.delayNext('SELECT 1', 5000);
        const reply = await app.http().get('/health/ready').timeout(15_000).expect(503);
        expect(reply.body.detail).toMatch(/^Not ready: database is down/);
      } finally {
        await app.close();
      }
    }, 60_000);

    it('leaves no connection in a transaction when its START arrives after the request gave up', async () => {
      // Tokens cached: each request's first statements are its snapshot's.
      const app = await appOnOneConnection({ COUNT_CACHE_TTL_MS: '0' });
      try {
        const cached = await app.token({ scopes: ['users:read'] });
        const list = () => app.http().get('/v1/users').set('Authorization', `Bearer ${cached}`);
        await list().expect(200);
        // Held past the client's bound (the limit plus 2 s), then delivered.
        proxy!.delayNext('START TRANSACTION', 4000);
        await list().expect(503);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const after: number[] = [];
        for (let i = 0; i < 10; i++) after.push((await list()).status);
        expect(after).toEqual(after.map(() => 200));
      } finally {
        await app.close();
      }
    }, 60_000);
  }
});
