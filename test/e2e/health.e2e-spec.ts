import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { PrivateRedis } from '../drill/services';
import { eventually, startTestApp, TestApp } from '../kit';
import { REFUSED_PORT } from '../kit/processes';

describe('health probes', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp()));
  afterAll(() => kit.close());

  it('answer without a token, outside /v1 and outside the API document', async () => {
    expect((await kit.http().get('/health/live').expect(200)).body).toMatchObject({ status: 'ok' });
    const ready = await kit.http().get('/health/ready').expect(200);
    expect(ready.body).toEqual({
      status: 'ok',
      info: { database: { status: 'up' } },
      error: {},
      details: { database: { status: 'up' } },
    });
    const openapi = await kit.http().get('/openapi.json').expect(200);
    expect(Object.keys(openapi.body.paths).some((path) => path.startsWith('/health'))).toBe(false);
  });
});

describe('readiness with REDIS_URL', () => {
  it('includes Redis when it answers', async () => {
    const kit = await startTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:6379' } });
    try {
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info).toEqual({
        database: { status: 'up' },
        redis: { status: 'up', reachable: true },
      });
    } finally {
      await kit.close();
    }
  });

  it('stays ready when nothing answers there, saying so: instances serve on local state', async () => {
    const kit = await startTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${REFUSED_PORT}` } });
    try {
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info.redis).toEqual({
        status: 'up',
        reachable: false,
        reason: 'ECONNREFUSED',
      });
      await kit.http().get('/health/live').expect(200);
    } finally {
      await kit.close();
    }
  });
});

describe('REDIS_URL naming a database the server does not have (/99 of 16)', () => {
  it('is not used, and readiness says why: ioredis would go on, on database 0', async () => {
    const prefix = `listing-test-${process.pid}-${randomBytes(4).toString('hex')}:`;
    const kit = await startTestApp({
      env: {
        REDIS_URL: 'redis://127.0.0.1:6379/99',
        REDIS_KEY_PREFIX: prefix,
        RATE_LIMIT_PER_MINUTE: '100',
      },
    });
    const databaseZero = new Redis('redis://127.0.0.1:6379/0');
    try {
      const token = await kit.token();
      for (const path of ['/v1/users', '/v1/login_activities']) {
        await kit.http().get(path).auth(token, { type: 'bearer' }).expect(200);
      }
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info.redis).toEqual({
        status: 'up',
        reachable: false,
        reason: 'database_refused',
      });
      expect(await databaseZero.keys(`${prefix}*`)).toEqual([]);
    } finally {
      databaseZero.disconnect();
      await kit.close();
    }
  });
});

describe('a Redis that refuses REDIS_URL database, then has it', () => {
  it('is used once it has it, without a restart, and readiness agrees', async () => {
    const redis = new PrivateRedis(['--databases', '4']);
    await redis.start();
    const prefix = `listing-test-${process.pid}-${randomBytes(4).toString('hex')}:`;
    const kit = await startTestApp({
      env: { REDIS_URL: `${redis.url}/6`, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '100' },
    });
    const keysIn = async (database: number) => {
      const client = new Redis(`${redis.url}/${database}`);
      try {
        return await client.keys(`${prefix}*`);
      } finally {
        client.disconnect();
      }
    };
    try {
      const token = await kit.token();
      const listed = () => kit.http().get('/v1/users').auth(token, { type: 'bearer' }).expect(200);
      await listed();
      expect((await kit.http().get('/health/ready')).body.info.redis.reason).toBe(
        'database_refused',
      );
      expect(await keysIn(0)).toEqual([]);

      await redis.kill();
      redis.args = ['--databases', '8'];
      await redis.start();
      const used = await eventually(
        async () => {
          await listed();
          return (await keysIn(6)).length;
        },
        (keys) => keys > 0,
        15_000,
        500,
      );
      expect(used).toBeGreaterThan(0);
      expect((await kit.http().get('/health/ready')).body.info.redis).toEqual({
        status: 'up',
        reachable: true,
      });
      expect(await keysIn(0)).toEqual([]);
    } finally {
      await kit.close();
      await redis.kill();
    }
  });

  it('gives probes sent at once the one reason', async () => {
    const kit = await startTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:6379/99' } });
    try {
      for (let round = 0; round < 5; round += 1) {
        const replies = await Promise.all(
          [1, 2, 3, 4].map(() => kit.http().get('/health/ready').expect(200)),
        );
        expect(replies.map((reply) => reply.body.info.redis.reason)).toEqual(
          Array(4).fill('database_refused'),
        );
      }
    } finally {
      await kit.close();
    }
  });
});

describe('readiness after a start, with a tail hold-back', () => {
  it('waits until an id has been seen TAIL_HOLDBACK_MS ago, so that no id walk serves before', async () => {
    const kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: '1500' } });
    try {
      const early = await kit.http().get('/health/ready').expect(503);
      expect(early.body.detail).toContain('tail is down (settling)');
      const later = await eventually(
        async () => (await kit.http().get('/health/ready')).status,
        (status) => status === 200,
        5_000,
        100,
      );
      expect(later).toBe(200);
      const ready = await kit.http().get('/health/ready').expect(200);
      expect(ready.body.info.tail).toEqual({ status: 'up' });
    } finally {
      await kit.close();
    }
  });
});
