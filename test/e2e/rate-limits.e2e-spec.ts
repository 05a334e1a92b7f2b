import { randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import request from 'supertest';
import { ApiTokensRepository } from '../../src/auth/api-tokens.repository';
import { generateToken, hashToken } from '../../src/auth/token-format';
import { startTestApp, TcpProxy, TestApp } from '../kit';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('rate limits per token (CONTRACT §6)', () => {
  let kit: TestApp;
  let unlimited: TestApp;
  let sharedA: TestApp;
  let sharedB: TestApp;
  let redisDown: TestApp;

  beforeAll(async () => {
    // Token look-ups uncached, so every request that gets past the limiter shows up as a look-up.
    kit = await startTestApp({
      env: {
        RATE_LIMIT_PER_MINUTE: '3',
        RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '5',
        TOKEN_CACHE_TTL_MS: '0',
      },
    });
    unlimited = await startTestApp({
      database: kit.database,
      env: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '3' },
    });
    const redisEnv = {
      RATE_LIMIT_PER_MINUTE: '3',
      REDIS_URL,
      REDIS_KEY_PREFIX: `listing-test-${process.pid}-${randomBytes(4).toString('hex')}:`,
    };
    sharedA = await startTestApp({ database: kit.database, env: redisEnv });
    sharedB = await startTestApp({ database: kit.database, env: redisEnv });
    // Nothing listens on port 1: Redis is unreachable from the start.
    redisDown = await startTestApp({
      database: kit.database,
      env: { ...redisEnv, REDIS_URL: 'redis://127.0.0.1:1' },
    });
  });
  afterAll(async () => {
    for (const app of [redisDown, sharedB, sharedA, unlimited]) await app?.close();
    await kit?.close();
  });

  const POLICY = '"default";q=3;w=60';
  const remainingOf = (header: string | undefined) => {
    const match = /^"default";r=(\d+);t=(\d+)$/.exec(header ?? '');
    expect(match).not.toBeNull();
    const reset = Number(match![2]);
    expect(reset).toBeGreaterThanOrEqual(1);
    expect(reset).toBeLessThanOrEqual(60);
    return Number(match![1]);
  };

  it('announces the policy and the remaining budget on a 200', async () => {
    const token = await kit.token();
    const response = await kit
      .http()
      .get('/v1/users')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(response.headers['ratelimit-policy']).toBe(POLICY);
    expect(remainingOf(response.headers['ratelimit'])).toBe(2);
  });

  it('announces them on a 400 and on 401s too', async () => {
    const token = await kit.token();
    const bad = await kit
      .http()
      .get('/v1/users?pgae=2')
      .set('Authorization', `Bearer ${token}`)
      .expect(400);
    expect(bad.headers['ratelimit-policy']).toBe(POLICY);
    expect(remainingOf(bad.headers['ratelimit'])).toBe(2);

    const unknown = await kit
      .http()
      .get('/v1/login_activities')
      .set('Authorization', `Bearer ${generateToken()}`)
      .expect(401);
    expect(unknown.headers['ratelimit-policy']).toBe(POLICY);
    expect(remainingOf(unknown.headers['ratelimit'])).toBe(2);

    const missing = await kit.http().get('/v1/users').expect(401);
    expect(missing.headers['ratelimit-policy']).toBe(POLICY);
    remainingOf(missing.headers['ratelimit']);

    const notFound = await kit.http().get('/v1/nothing').set('Authorization', `Bearer ${token}`);
    expect(notFound.status).toBe(404);
    expect(notFound.headers['ratelimit-policy']).toBe(POLICY);
  });

  it('answers 429 problem+json with Retry-After once a token spent its budget, before any look-up', async () => {
    const token = await kit.token();
    const other = await kit.token();
    const lookups = jest.spyOn(kit.app.get(ApiTokensRepository), 'findByHash');
    try {
      for (const remaining of [2, 1, 0]) {
        const ok = await kit
          .http()
          .get('/v1/users')
          .set('Authorization', `Bearer ${token}`)
          .expect(200);
        expect(remainingOf(ok.headers['ratelimit'])).toBe(remaining);
      }
      expect(lookups).toHaveBeenCalledTimes(3);

      const refused = await kit
        .http()
        .get('/v1/users')
        .set('Authorization', `Bearer ${token}`)
        .expect(429);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body).toMatchObject({ status: 429, title: 'Too Many Requests' });
      expect(typeof refused.body.request_id).toBe('string');
      const retryAfter = Number(refused.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers['ratelimit-policy']).toBe(POLICY);
      expect(remainingOf(refused.headers['ratelimit'])).toBe(0);
      expect(JSON.stringify(refused.body)).not.toContain(token);
      // Refused before the token was looked up.
      expect(lookups).toHaveBeenCalledTimes(3);

      // Another token has its own budget.
      await kit.http().get('/v1/users').set('Authorization', `Bearer ${other}`).expect(200);
    } finally {
      lookups.mockRestore();
    }
  });

  it('spends no budget on a 304 (CONTRACT §3), up to a budget of them a window', async () => {
    for (const app of [kit, sharedA]) {
      const token = await app.token();
      const get = () => app.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
      const page = await get().expect(200);
      expect(remainingOf(page.headers['ratelimit'])).toBe(2);
      const polls: number[] = [];
      for (let poll = 0; poll < 4; poll += 1) {
        const unchanged = await get().set('If-None-Match', page.headers['etag']).expect(304);
        polls.push(remainingOf(unchanged.headers['ratelimit']));
      }
      // A 304 reads its page as a 200 does: past 3 (the budget) in a window, they are spent.
      expect(polls).toEqual([2, 2, 2, 1]);
      const again = await get().expect(200);
      expect(remainingOf(again.headers['ratelimit'])).toBe(0);
    }
  });

  it('limits every spelling of a path that serves data', async () => {
    const token = await kit.token();
    const statuses: number[] = [];
    for (const path of ['/V1/users', '/v1/users/', '/v1//users', '/%76%31/users', '//v1/users']) {
      // Plain supertest: these spellings are not in the OpenAPI document (Express routes
      // case-insensitively and ignores a trailing slash), so the kit's contract check would refuse
      // them; what matters here is that none of them gets past the limiter.
      const response = await request(kit.app.getHttpServer())
        .get(path)
        .set('Authorization', `Bearer ${token}`);
      statuses.push(response.status);
      if (response.status === 200) expect(response.headers['ratelimit']).toBeDefined();
    }
    // Only the two spellings that serve data answered 200, and they spent the token's budget.
    expect(statuses).toEqual([200, 200, 404, 404, 404]);
    await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(429);
  });

  it('stops looking up tokens for a client that keeps presenting unknown ones', async () => {
    const lookups = jest.spyOn(kit.app.get(ApiTokensRepository), 'findByHash');
    try {
      const replies = await guessedInTurn(kit, 20);
      const statuses = replies.map((response) => response.status);
      for (const response of replies.filter((reply) => reply.status === 429)) {
        expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // The earlier test spent one of the 5 failures this minute allows.
      expect(statuses.filter((status) => status === 401)).toHaveLength(4);
      expect(statuses.slice(4).every((status) => status === 429)).toBe(true);
      expect(lookups.mock.calls.length).toBeLessThanOrEqual(4);
      // Until the minute ends, that client gets 429 for any token (README: Security).
      const valid = await kit.token();
      const blocked = await kit.as(valid).get('/v1/users').expect(429);
      // It names the budget spent, the client's rejected tokens, not the token's requests.
      expect(blocked.headers['ratelimit-policy']).toBe('"auth-failures";q=5;w=60');
      expect(blocked.headers.ratelimit).toMatch(/^"auth-failures";r=0;t=\d+$/);
    } finally {
      lookups.mockRestore();
    }
  });

  /**
   * The statuses of six requests with rejected tokens, each forwarded for `forwardedFor(i)`, to an
   * app trusting `trustProxy` that refuses a client after three.
   */
  async function rejectedTokenStatuses(trustProxy: string, forwardedFor: (i: number) => string) {
    const proxied = await startTestApp({
      database: kit.database,
      env: { TRUST_PROXY: trustProxy, RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '3' },
    });
    try {
      const statuses: number[] = [];
      for (let i = 1; i <= 6; i++) {
        const response = await proxied
          .http()
          .get('/v1/users')
          .set('Authorization', `Bearer ${generateToken()}`)
          .set('X-Forwarded-For', forwardedFor(i));
        statuses.push(response.status);
      }
      return statuses;
    } finally {
      await proxied.close();
    }
  }

  it('counts a client behind TRUST_PROXY=true by the address its proxy saw, not one it claims', async () => {
    // What a proxy appending the client's address forwards when the client sent its own.
    const statuses = await rejectedTokenStatuses('true', (i) => `10.9.9.${i}, 203.0.113.7`);
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
  });

  it('counts an IPv6 client by its /64: rotating the rest of the address changes nothing', async () => {
    const statuses = await rejectedTokenStatuses(
      'loopback',
      (i) => `2001:db8:1:2::${i.toString(16)}`,
    );
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429]);
  });

  it('does not limit requests with RATE_LIMIT_PER_MINUTE=0, but still rejected tokens', async () => {
    const token = await unlimited.token();
    for (let i = 0; i < 8; i++) {
      const response = await unlimited
        .http()
        .get('/v1/users')
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      expect(response.headers['ratelimit']).toBeUndefined();
      expect(response.headers['ratelimit-policy']).toBeUndefined();
    }
    const guesses = await guessedInTurn(unlimited, 5);
    expect(guesses.map((response) => response.status)).toEqual([401, 401, 401, 429, 429]);
    await unlimited.as(token).get('/v1/users').expect(429);
  });

  /** The replies to `count` requests with new well-formed tokens, sent one after another. */
  async function guessedInTurn(app: TestApp, count: number) {
    const replies = [];
    for (let i = 0; i < count; i++) {
      replies.push(
        await app.http().get('/v1/users').set('Authorization', `Bearer ${generateToken()}`),
      );
    }
    return replies;
  }

  /** The statuses of `count` requests sent at once to `apps` in turn, each with `tokenOf(i)`. */
  const concurrentStatuses = async (
    apps: TestApp[],
    count: number,
    tokenOf: (i: number) => string,
  ) =>
    (
      await Promise.all(
        Array.from({ length: count }, (_, i) =>
          apps[i % apps.length]
            .http()
            .get('/v1/users')
            .set('Authorization', `Bearer ${tokenOf(i)}`),
        ),
      )
    )
      .map((response) => response.status)
      .sort();

  it('checks guesses sent at once in turn, and never refuses valid tokens sent at once', async () => {
    const env = () => ({
      RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '4',
      REDIS_URL,
      REDIS_KEY_PREFIX: `listing-test-${process.pid}-${randomBytes(4).toString('hex')}:`,
    });
    const shared = env();
    const one = await startTestApp({ database: kit.database, env: shared });
    const two = await startTestApp({ database: kit.database, env: shared });
    const alone = await startTestApp({ database: kit.database, env: env() });
    try {
      // A client's burst with one token it has not used yet, and with twelve new valid ones.
      const valid = await one.token();
      expect(await concurrentStatuses([one, two], 12, () => valid)).toEqual(
        Array<number>(12).fill(200),
      );
      const fresh = await Promise.all(Array.from({ length: 12 }, () => one.token()));
      expect(await concurrentStatuses([one, two], 12, (i) => fresh[i])).toEqual(
        Array<number>(12).fill(200),
      );
      // Guesses at once: one instance looks up exactly its limit; two sharing Redis, one more.
      const guesses = await concurrentStatuses([alone], 12, () => generateToken());
      expect(guesses).toEqual([...Array<number>(4).fill(401), ...Array<number>(8).fill(429)]);
      const across = await concurrentStatuses([one, two], 12, () => generateToken());
      const rejected = across.filter((status) => status === 401).length;
      expect(rejected).toBeGreaterThanOrEqual(4);
      expect(rejected).toBeLessThanOrEqual(5);
      expect(across.filter((status) => status !== 401).every((status) => status === 429)).toBe(
        true,
      );
    } finally {
      for (const app of [alone, two, one]) await app.close();
    }
  });

  it('never counts an accepted token, however long its reply then takes', async () => {
    // Exports of 2,100 rows at 150 requests a minute, one per 10 rows: each pauses after its first
    // chunk until the next window, its reply still open.
    const paced = await startTestApp({
      database: kit.database,
      env: {
        EXPORT_ROWS_PER_REQUEST: '10',
        RATE_LIMIT_PER_MINUTE: '150',
        RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '2',
        TAIL_HOLDBACK_MS: '0',
      },
    });
    const held: ClientRequest[] = [];
    try {
      await paced.data.rows('login_activities', 2100, (i) => ({
        user_email: `paced${i}@example.com`,
        authentication_method: 'password',
        ip_address: '192.0.2.1',
        otp_required: false,
        success: true,
        created_at: new Date(Date.UTC(2026, 5, 1, 0, 0, 0, i)),
      }));
      const server = paced.app.getHttpServer();
      await new Promise<void>((resolve) => server.listen(0, resolve));
      const { port } = server.address() as AddressInfo;
      const tokens = [await paced.token(), await paced.token(), await paced.token()];
      const statuses = await Promise.all(
        tokens.map(
          (token) =>
            new Promise<number>((resolve) => {
              const request = httpRequest(
                {
                  port,
                  path: '/v1/login_activities',
                  headers: { Authorization: `Bearer ${token}`, Accept: 'application/x-ndjson' },
                },
                (response) => resolve(response.statusCode ?? 0),
              );
              request.on('error', () => resolve(0));
              request.end();
              held.push(request);
            }),
        ),
      );
      expect(statuses).toEqual([200, 200, 200]);
      // Three new tokens accepted, three replies open, nothing counted: a fourth is served too.
      await paced
        .as(await paced.token())
        .get('/v1/users')
        .expect(200);
    } finally {
      for (const request of held) request.destroy();
      await paced.close();
    }
  });

  it('shares one budget between instances through Redis', async () => {
    const token = await sharedA.token();
    const call = (app: TestApp) =>
      app.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
    expect(remainingOf((await call(sharedA).expect(200)).headers['ratelimit'])).toBe(2);
    expect(remainingOf((await call(sharedB).expect(200)).headers['ratelimit'])).toBe(1);
    expect(remainingOf((await call(sharedA).expect(200)).headers['ratelimit'])).toBe(0);
    const refused = await call(sharedB).expect(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('keeps serving and limiting with per-instance counters when Redis is unreachable', async () => {
    const token = await redisDown.token();
    const call = () => redisDown.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
    for (const remaining of [2, 1, 0]) {
      expect(remainingOf((await call().expect(200)).headers['ratelimit'])).toBe(remaining);
    }
    await call().expect(429);
  });

  it('limits per instance, and logs it, when Redis answers but refuses the budget', async () => {
    const prefix = `listing-test-refused-${process.pid}-${randomBytes(4).toString('hex')}:`;
    const env = { RATE_LIMIT_PER_MINUTE: '3', REDIS_URL, REDIS_KEY_PREFIX: prefix };
    const app = await startTestApp({ database: kit.database, env, captureLogs: true });
    const redis = new Redis(REDIS_URL);
    try {
      const token = await app.token();
      // A key of another type (or a Redis out of memory): each call of the budget fails.
      await redis.hset(`${prefix}rate:requests:token:${hashToken(token)}`, 'other', 'type');
      const call = () => app.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
      for (const remaining of [2, 1, 0]) {
        expect(remainingOf((await call().expect(200)).headers['ratelimit'])).toBe(remaining);
      }
      await call().expect(429);
      const refusals = app
        .logs()
        .filter((line) => String(line.msg).startsWith('Redis refused a rate-limit command'));
      expect(refusals).toHaveLength(1);
    } finally {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
      await app.close();
    }
  });

  it('stops waiting for a Redis that hangs, within about a second', async () => {
    const redis = new URL(REDIS_URL);
    const proxy = new TcpProxy(redis.hostname, Number(redis.port || 6379));
    const app = await startTestApp({
      database: kit.database,
      env: {
        RATE_LIMIT_PER_MINUTE: '20',
        REDIS_URL: `redis://127.0.0.1:${await proxy.start()}`,
        REDIS_KEY_PREFIX: `listing-test-${process.pid}-${randomBytes(4).toString('hex')}:`,
      },
    });
    try {
      const token = await app.token();
      const call = () => app.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
      await call().expect(200);
      proxy.stall();
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const took: number[] = [];
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        await call().expect(200);
        took.push(Date.now() - started);
      }
      // Waiting for each command's timeout (0.5 s), a request took 1 s or more.
      expect(took.filter((ms) => ms >= 500)).toEqual([]);
    } finally {
      proxy.resume();
      await app.close();
      await proxy.stop();
    }
  }, 60_000);
});
