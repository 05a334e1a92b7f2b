import { createConnection } from 'mysql2/promise';
import { ConfigError, loadConfig } from '../../src/config/app-config';
import {
  ApiClient,
  eventually,
  parseLinks,
  ReplicatedMariaDb,
  startTestApp,
  TcpProxy,
  TestApp,
  testTarget,
} from '../kit';

/**
 * DATABASE_REPLICA_URLS against a real replica: two private MariaDB servers, a primary with a
 * binary log and a replica of it (GTID), the replica reached through a TCP proxy that can cut it
 * off mid-statement. Rows are written on the primary only and reach the replica by replication.
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
  describe('read replicas (MariaDB, a real replica)', () => {
    const HOLDBACK_MS = 1000;
    const TOKEN_TTL_MS = 1000;
    const servers = new ReplicatedMariaDb({ innodbBufferPoolMb: 64 });
    let proxy: TcpProxy;
    let kit: TestApp;
    let api: ApiClient;

    type ReplicaDetails = {
      in_rotation: boolean;
      reason?: string;
      detail?: string;
      lag_seconds: number | null;
    };

    /** The readiness reply, which must be 200 whatever the replica does. */
    const ready = async () => {
      const response = await kit.http().get('/health/ready').expect(200);
      return response.body.info as Record<string, ReplicaDetails & { status: string }> & {
        replicas: Record<string, ReplicaDetails>;
      };
    };
    const replica0 = async () => (await ready()).replicas.replica0;
    /** Waits until replica0 is in (or out of) the rotation; gives its details. */
    const rotation = async (inRotation: boolean, timeoutMs = 15_000) => {
      const details = await eventually(replica0, (r) => r.in_rotation === inRotation, timeoutMs);
      expect(details).toMatchObject({ in_rotation: inRotation });
      return details;
    };
    const metrics = async () => (await kit.http().get('/metrics').expect(200)).text;
    const metric = (text: string, line: string) =>
      Number(new RegExp(`^${line.replace(/[{}"=.]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    const replicaStatements = async () =>
      metric(await metrics(), 'db_queries_total{target="replica",outcome="ok"}') || 0;
    const warnings = (pattern: RegExp) =>
      kit.logs().filter((line) => line.level === 40 && pattern.test(String(line.msg)));

    /** A user written on the primary, with a name to look it up by. */
    const userOnPrimary = (name: string) => kit.data.user({ name });
    // Newest first: an id walk holds rows back for TAIL_HOLDBACK_MS after their ids appear.
    const usersNamed = async (prefix: string) =>
      (
        await api.get(`/v1/users?q=${encodeURIComponent(prefix)}&sort=-id`).expect(200)
      ).body.data.map((user: { name: string }) => user.name) as string[];

    beforeAll(async () => {
      await servers.start();
      await servers.primary.query(
        'CREATE DATABASE listing CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci',
      );
      proxy = new TcpProxy('127.0.0.1', servers.replica.port);
      await proxy.start();
      kit = await startTestApp({
        // The schema comes from the app's own migrations on the primary, replicated.
        database: {
          target: 'mysql',
          env: { DATABASE_URL: `${servers.primary.url}/listing` },
          drop: async () => undefined,
        },
        env: {
          DATABASE_REPLICA_URLS: `mysql://root@127.0.0.1:${proxy.port}/listing`,
          TAIL_HOLDBACK_MS: String(HOLDBACK_MS),
          TOKEN_CACHE_TTL_MS: String(TOKEN_TTL_MS),
          COUNT_CACHE_TTL_MS: '0',
        },
        captureLogs: true,
      });
      await kit.data.many(3, (i) => userOnPrimary(`Seed ${i}`));
      api = await kit.client();
      await kit.ready(); // once an id has been seen a hold-back ago (TAIL_HOLDBACK_MS)
      await servers.caughtUp();
      await rotation(true);
    }, 120_000);

    afterAll(async () => {
      await kit?.close();
      await proxy?.stop();
      await servers.remove();
    });

    it('serves listings from a replica in the rotation; the primary answers readiness', async () => {
      const before = await replicaStatements();
      expect(await usersNamed('Seed')).toEqual(['Seed 2', 'Seed 1', 'Seed 0']);
      expect(await replicaStatements()).toBeGreaterThan(before);
      const info = await ready();
      expect(info.database).toEqual({ status: 'up' });
      expect(info.replicas.replica0).toMatchObject({ in_rotation: true, lag_seconds: 0 });
      expect(metric(await metrics(), 'database_replica_in_rotation{replica="replica0"}')).toBe(1);
      expect(await metrics()).toMatch(/^db_pool_connections_max\{pool="replica0"\} \d+/m);
    });

    it('costs the primary one token look-up per token and TOKEN_CACHE_TTL_MS, whatever the requests', async () => {
      await rotation(true);
      const count = async () => {
        const text = await metrics();
        const of = (target: string) =>
          (metric(text, `db_queries_total{target="${target}",outcome="ok"}`) || 0) +
          (metric(text, `db_queries_total{target="${target}",outcome="error"}`) || 0);
        return { primary: of('primary'), replica: of('replica') };
      };
      // Back in the rotation: id walks answer 503 until its snapshot holds a settled id.
      await eventually(
        async () => (await api.get('/v1/users?limit=1')).status,
        (status) => status === 200,
        15_000,
        100,
      );
      const before = await count();
      const started = Date.now();
      for (let i = 0; i < 50; i++) await api.get('/v1/users?limit=1').expect(200);
      const elapsed = Date.now() - started;
      const after = await count();
      // Each request counts and reads its page on the replica.
      expect(after.replica - before.replica).toBeGreaterThanOrEqual(100);
      // The primary: a look-up each time the cached one expired, and at most one last_used_at.
      expect(after.primary - before.primary).toBeLessThanOrEqual(
        Math.ceil(elapsed / TOKEN_TTL_MS) + 2,
      );
    });

    it('runs a statement again on the primary when the replica dies under it: 200, never 5xx', async () => {
      await rotation(true);
      // The replica goes silent mid-conversation, then its connections drop.
      proxy.freeze();
      const reply = api.get('/v1/users?q=Seed').then((response) => response);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await proxy.stop();
      const response = await reply;
      expect(response.status).toBe(200);
      expect(response.body.data).toHaveLength(3);
      expect(
        warnings(/replica0.*a request's statement failed there .* runs again on the primary/),
      ).not.toEqual([]);
      await proxy.start();
      await rotation(true);
    });

    it('a replica that goes silent (a partition, a frozen host) costs no request: 200 from the primary', async () => {
      await rotation(true);
      proxy.freeze();
      try {
        // Each waits on the replica until a check finds it down (within about 2 s), then runs on
        // the primary; before, each waited for its statement limit (5 s) and answered 503.
        const replies = await Promise.all(
          [1, 2, 3, 4, 5, 6].map((limit) => api.get(`/v1/users?q=Seed&limit=${limit}`)),
        );
        expect(replies.map((reply) => reply.status)).toEqual(Array(6).fill(200));
        expect(replies.map((reply) => reply.body.data.length)).toEqual([1, 2, 3, 3, 3, 3]);
        expect((await replica0()).reason).toBe('down');
      } finally {
        await proxy.stop();
        await proxy.start();
      }
      await rotation(true);
    });

    it('a replica down: 200 from the primary, with rows written since, and readiness stays up', async () => {
      await rotation(true);
      await servers.replica.kill();
      // At once, before any check has noticed: each request that tries it runs on the primary.
      for (let i = 0; i < 5; i++) await api.get('/v1/users?limit=1').expect(200);
      await userOnPrimary('Written while the replica is down');
      expect(await usersNamed('Written while')).toEqual(['Written while the replica is down']);

      const out = await eventually(replica0, (r) => r.reason === 'down', 5000);
      expect(out).toMatchObject({ in_rotation: false, reason: 'down' });
      // The reply is public: a reason and a code, no host, port or user.
      expect(JSON.stringify(out)).not.toMatch(/127\.0\.0\.1|root|:\d{4,5}/);
      const text = await metrics();
      expect(metric(text, 'database_replica_in_rotation{replica="replica0"}')).toBe(0);
      expect(
        metric(text, 'database_replica_out_of_rotation{replica="replica0",reason="down"}'),
      ).toBe(1);
      expect(warnings(/replica0 out of the read rotation: (down|failed)/)).not.toEqual([]);

      // Back, it catches up and returns to the rotation by itself.
      await servers.replica.start();
      await rotation(true, 20_000);
      const before = await replicaStatements();
      expect(await usersNamed('Written while')).toEqual(['Written while the replica is down']);
      expect(await replicaStatements()).toBeGreaterThan(before);
    });

    it('a replica whose SQL thread stops leaves the rotation within seconds: fresh rows from the primary', async () => {
      await rotation(true);
      await servers.replica.query('STOP SLAVE SQL_THREAD');
      try {
        await userOnPrimary('Appended while the replica stands still');
        const started = Date.now();
        const names = await eventually(
          () => usersNamed('Appended while'),
          (found) => found.length === 1,
          5000,
        );
        expect(names).toEqual(['Appended while the replica stands still']);
        expect(Date.now() - started).toBeLessThan(5000);
        expect(await replica0()).toMatchObject({
          in_rotation: false,
          reason: 'sql_thread_stopped',
          lag_seconds: null,
        });
        expect(warnings(/replica0 out of the read rotation: sql_thread_stopped/)).not.toEqual([]);
      } finally {
        await servers.replica.query('START SLAVE SQL_THREAD');
      }
      await rotation(true);
    });

    it('a replica falling behind: a revocation holds within TOKEN_CACHE_TTL_MS, and past REPLICA_MAX_LAG_MS the primary serves, fresh', async () => {
      await rotation(true);
      const { id, token } = await kit.tokenWithId({ scopes: ['users:read'] });
      await servers.caughtUp();
      const lagging = await holdReplicaBehind();
      try {
        const revoked = kit.as(token);
        await revoked.get('/v1/users?limit=1').expect(200);
        await kit.dataSource.query(
          'UPDATE api_tokens SET revoked_at = UTC_TIMESTAMP(3) WHERE id = ?',
          [id],
        );
        const at = Date.now();
        const status = await eventually(
          async () => (await revoked.get('/v1/users?limit=1')).status,
          (code) => code === 401,
          TOKEN_TTL_MS + 2000,
        );
        expect(status).toBe(401);
        expect(Date.now() - at).toBeLessThan(TOKEN_TTL_MS + 1000);
        // Meanwhile the replica, still serving the listings, holds the token unrevoked.
        const [row] = await servers.replica.query<{ revoked_at: Date | null }[]>(
          'SELECT revoked_at FROM listing.api_tokens WHERE id = ?',
          [id],
        );
        expect(row.revoked_at).toBeNull();
        expect(await replica0()).toMatchObject({ in_rotation: true });

        // Further behind than REPLICA_MAX_LAG_MS (5 s), it leaves the rotation.
        await userOnPrimary('Appended while the replica falls behind');
        const out = await eventually(replica0, (r) => r.reason === 'lagging', 10_000);
        expect(out).toMatchObject({ in_rotation: false, reason: 'lagging' });
        expect(out.lag_seconds).toBeGreaterThanOrEqual(5);
        expect(await usersNamed('Appended while the replica falls')).toEqual([
          'Appended while the replica falls behind',
        ]);
        expect(warnings(/replica0 out of the read rotation: lagging \(\d+ s behind\)/)).not.toEqual(
          [],
        );
      } finally {
        await lagging.release();
      }
      await rotation(true);
    });

    it('a tail walk on a replica that lags more than TAIL_HOLDBACK_MS skips no row committed late', async () => {
      await rotation(true);
      const user = await kit.data.user({ name: 'Logs in' });
      await servers.caughtUp();
      // Walk to the tail.
      let next = `/v1/login_activities?after_id=0&limit=100`;
      for (;;) {
        const page = await api.get(next).expect(200);
        next = parseLinks(page.headers.link).next;
        if (page.body.data.length === 0) break;
      }
      const seen: number[] = [];
      const poll = async () => {
        const page = await api.get(next).expect(200);
        seen.push(...page.body.data.map((row: { id: number }) => row.id));
        next = parseLinks(page.headers.link).next;
      };

      // A login: its activity takes a lower id, and commits after another login's higher id. The
      // replica applies both in the primary's order, but is held up inside the first.
      const lagging = await holdReplicaBehind(user.id);
      let lower = 0;
      let higher = 0;
      try {
        ({ lower, higher } = await lateCommit(user.id));
        // Long enough for the hold-back alone to let the higher id through, short of 5 s of lag.
        const until = Date.now() + HOLDBACK_MS + 2500;
        while (Date.now() < until) {
          await poll();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        // Served by the replica throughout, lagging more than the hold-back.
        const details = await replica0();
        expect(details.in_rotation).toBe(true);
        expect(details.lag_seconds! * 1000).toBeGreaterThanOrEqual(2 * HOLDBACK_MS);
        expect(seen).not.toContain(higher);
      } finally {
        await lagging.release();
      }
      await eventually(
        async () => {
          await poll();
          return seen;
        },
        (ids) => ids.includes(higher),
        10_000,
      );
      expect(seen).toEqual([lower, higher]);
    });

    it('totals counted on a replica that lags take in a row committed late within the hold-back', async () => {
      await rotation(true);
      // Totals cached and advanced, as they are by default; the full recount too far off to help.
      const counting = await startTestApp({
        database: kit.database,
        env: {
          DATABASE_REPLICA_URLS: `mysql://root@127.0.0.1:${proxy.port}/listing`,
          TAIL_HOLDBACK_MS: String(HOLDBACK_MS),
          COUNT_CACHE_TTL_MS: '300',
          COUNT_CACHE_FULL_RECOUNT_MS: '3600000',
        },
      });
      try {
        await counting.ready(); // the newest ids settled since the start
        const client = await counting.client();
        // Id walks answer 503 until what the replica holds is a hold-back past the start.
        await eventually(
          async () => (await client.get('/v1/login_activities?limit=1')).status,
          (status) => status === 200,
          15_000,
          100,
        );
        const total = async () =>
          Number(
            (await client.get('/v1/login_activities?limit=1').expect(200)).headers['x-total-count'],
          );
        const user = await kit.data.user({ name: 'Counted' });
        await servers.caughtUp();
        await eventually(
          async () => (await counting.http().get('/health/ready')).body.info?.replicas?.replica0,
          (replica) => replica?.in_rotation === true,
          15_000,
        );
        const before = await total();
        // The higher id reaches the replica; the lower one, committed later, is held up behind.
        const lagging = await holdReplicaBehind(user.id);
        try {
          await lateCommit(user.id);
          // Counted and advanced past the hold-back while the replica lags.
          const until = Date.now() + HOLDBACK_MS + 2500;
          while (Date.now() < until) {
            await total();
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        } finally {
          await lagging.release();
        }
        const after = await eventually(total, (n) => n === before + 2, 5000, 100);
        expect(after).toBe(before + 2);
      } finally {
        await counting.close();
      }
    });

    it('the rollup built at a start on a replica takes in the rows committed late meanwhile', async () => {
      await rotation(true);
      // Logins in pairs, all along: the first takes the lower id and commits within the hold-back
      // after the second.
      let writing = true;
      const pairs: Promise<void>[] = [];
      const writer = (async () => {
        while (writing) {
          pairs.push(
            (async () => {
              const [first, second] = await Promise.all([
                createConnection({ uri: `${servers.primary.url}/listing` }),
                createConnection({ uri: `${servers.primary.url}/listing` }),
              ]);
              const insert =
                'INSERT INTO login_activities (user_email, authentication_method, ip_address,' +
                " otp_required, success, created_at) VALUES ('pair@example.com', 'password'," +
                " '192.0.2.9', 0, 1, UTC_TIMESTAMP(3))";
              try {
                await first.query('BEGIN');
                await first.query(insert);
                await second.query(insert);
                await new Promise((resolve) => setTimeout(resolve, HOLDBACK_MS * 0.7));
                await first.query('COMMIT');
              } finally {
                await first.end();
                await second.end();
              }
            })(),
          );
          await new Promise((resolve) => setTimeout(resolve, 400));
        }
      })();
      let warmed: TestApp | undefined;
      try {
        warmed = await startTestApp({
          database: kit.database,
          env: {
            DATABASE_REPLICA_URLS: `mysql://root@127.0.0.1:${proxy.port}/listing`,
            TAIL_HOLDBACK_MS: String(HOLDBACK_MS),
            COUNT_CACHE_WARMUP: 'true',
            COUNT_CACHE_TTL_MS: '300',
            COUNT_CACHE_FULL_RECOUNT_MS: '3600000',
          },
        });
        await warmed.warmedUp();
        await new Promise((resolve) => setTimeout(resolve, 1000));
        writing = false;
        await writer;
        await Promise.all(pairs);
        await servers.caughtUp();
        const client = await warmed.client();
        const [{ n }] = await servers.primary.query<{ n: number }[]>(
          'SELECT COUNT(*) AS n FROM listing.login_activities',
        );
        const total = async () =>
          Number(
            (await client.get('/v1/login_activities?limit=1').expect(200)).headers['x-total-count'],
          );
        expect(await eventually(total, (value) => value === Number(n), 5000, 200)).toBe(Number(n));
      } finally {
        writing = false;
        await writer;
        await Promise.all(pairs);
        await warmed?.close();
      }
    });

    it('readiness after a start waits as long as a lagging replica holds no settled id: never 200 while an id walk answers 503', async () => {
      await rotation(true);
      const lagging = await holdReplicaBehind();
      let released = false;
      let second: TestApp | undefined;
      try {
        second = await startTestApp({
          database: kit.database,
          env: {
            DATABASE_REPLICA_URLS: `mysql://root@127.0.0.1:${proxy.port}/listing`,
            TAIL_HOLDBACK_MS: String(HOLDBACK_MS),
            // In the rotation however far the held replica falls behind.
            REPLICA_MAX_LAG_MS: '60000',
            DB_MIGRATIONS_RUN: 'false',
          },
        });
        const client = await second.client();
        const until = Date.now() + HOLDBACK_MS + 2500;
        const pairs: [ready: number, walk: number][] = [];
        while (Date.now() < until) {
          const ready = (await second.http().get('/health/ready')).status;
          const walk = (await client.get('/v1/users?limit=5')).status;
          pairs.push([ready, walk]);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        // The replica served the walks (on the primary they would answer after the hold-back)...
        expect(pairs.slice(-5).map(([, walk]) => walk)).toEqual(Array(5).fill(503));
        // ...and readiness said so: no 200 while id walks answer 503.
        expect(pairs.filter(([ready, walk]) => ready === 200 && walk === 503)).toEqual([]);
        await lagging.release();
        released = true;
        await second.ready();
        await client.get('/v1/users?limit=5').expect(200);
      } finally {
        if (!released) await lagging.release();
        await second?.close();
      }
    });

    it('a replica whose user may not read its replication status stays out, saying so', async () => {
      await servers.primary.query("CREATE USER 'reader'@'%'");
      await servers.primary.query("GRANT SELECT ON listing.* TO 'reader'@'%'");
      await servers.caughtUp();
      const second = await startTestApp({
        database: kit.database,
        env: {
          DATABASE_REPLICA_URLS: `mysql://reader@127.0.0.1:${servers.replica.port}/listing`,
          DB_MIGRATIONS_RUN: 'false',
        },
      });
      try {
        const details = async () =>
          (await second.http().get('/health/ready').expect(200)).body.info.replicas.replica0;
        expect(await eventually(details, (r) => r.reason !== 'unchecked', 5000)).toMatchObject({
          in_rotation: false,
          reason: 'not_permitted',
          detail: 'needs SLAVE MONITOR (MariaDB) or REPLICATION CLIENT (MySQL)',
        });
        await servers.primary.query("GRANT SLAVE MONITOR ON *.* TO 'reader'@'%'");
        await servers.caughtUp();
        expect(await eventually(details, (r) => r.in_rotation, 5000)).toMatchObject({
          in_rotation: true,
        });
      } finally {
        await second.close();
      }
    });

    /**
     * Holds the replica behind the primary while it keeps replicating: a transaction of its own
     * locks a user row, so the replica's SQL thread waits inside the next transaction that
     * updates that row (and all after it), and its lag grows by the second.
     */
    async function holdReplicaBehind(userId?: number) {
      const lock = await createConnection({ uri: `${servers.replica.url}/listing` });
      const [[first]] = (await lock.query('SELECT MIN(id) AS id FROM users')) as unknown as [
        [{ id: number }],
      ];
      const id = userId ?? first.id;
      await lock.query('BEGIN');
      await lock.query('SELECT id FROM users WHERE id = ? FOR UPDATE', [id]);
      if (userId === undefined) {
        // Nothing else is held up unless the primary updates that row: it does, now.
        await kit.dataSource.query('UPDATE users SET updated_at = UTC_TIMESTAMP(3) WHERE id = ?', [
          id,
        ]);
        await eventually(replica0, (r) => (r.lag_seconds ?? 0) >= 1, 5000);
      }
      return {
        release: async () => {
          await lock.query('ROLLBACK');
          await lock.end();
          await servers.caughtUp();
        },
      };
    }

    /**
     * Two logins on the primary: the first takes the lower id, the second the higher one and
     * commits first; the first then updates its user and commits 300 ms later (well within the
     * hold-back).
     */
    async function lateCommit(userId: number): Promise<{ lower: number; higher: number }> {
      const insert =
        'INSERT INTO login_activities (user_email, authentication_method, ip_address, otp_required,' +
        ' success, created_at, user_id) VALUES (?, ?, ?, 0, 1, UTC_TIMESTAMP(3), ?)';
      const first = await createConnection({ uri: `${servers.primary.url}/listing` });
      const second = await createConnection({ uri: `${servers.primary.url}/listing` });
      const login = async (
        connection: typeof first,
        email: string,
        ip: string,
        user: number | null,
      ) =>
        (
          (await connection.query(insert, [email, 'password', ip, user])) as [
            { insertId: number },
            unknown,
          ]
        )[0];
      try {
        await first.query('BEGIN');
        const a = await login(first, 'a@example.com', '192.0.2.1', userId);
        const b = await login(second, 'b@example.com', '192.0.2.2', null);
        await new Promise((resolve) => setTimeout(resolve, 300));
        await first.query('UPDATE users SET updated_at = UTC_TIMESTAMP(3) WHERE id = ?', [userId]);
        await first.query('COMMIT');
        expect(a.insertId).toBeLessThan(b.insertId);
        return { lower: a.insertId, higher: b.insertId };
      } finally {
        await first.end();
        await second.end();
      }
    }
  });
}
