import Redis from 'ioredis';
import { eventually, startTestApp, TestApp, watchStatements } from '../kit';

/** Redis of this machine (CI starts it); totals are keyed per database, so runs do not mix. */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('listing totals shared through Redis', () => {
  let first: TestApp;
  let second: TestApp;
  let redisDown: TestApp;
  let token: string;

  beforeAll(async () => {
    const env = { REDIS_URL, COUNT_CACHE_TTL_MS: '60000', DEEP_PAGE_ROWS: '10' };
    first = await startTestApp({ env });
    second = await startTestApp({ env, database: first.database });
    // Nothing listens on port 1: this instance must fall back to counting by itself.
    redisDown = await startTestApp({
      env: { ...env, REDIS_URL: 'redis://127.0.0.1:1' },
      database: first.database,
    });
    token = await first.token();
    await first.data.many(7, () => first.data.loginActivity({ success: false }));
  });

  afterAll(async () => {
    await redisDown.close();
    await second.close();
    await first.close();
  });

  it('counts a key once across instances under concurrent requests', async () => {
    const watches = [watchStatements(first.dataSource), watchStatements(second.dataSource)];
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? second : first)
          .http()
          .get(`/v1/login_activities?success=false&limit=3&page=${(i % 3) + 1}`)
          .set('Authorization', `Bearer ${token}`),
      ),
    );
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(response.headers['x-total-count']).toBe('7');
    }
    expect(watches.reduce((sum, watch) => sum + watch.fullCounts(), 0)).toBe(1);
    watches.forEach((watch) => watch.stop());
  });

  it('shares histograms with their buckets: a keyset total on another instance is exact', async () => {
    // Ids spread over several 4096-id buckets.
    for (let i = 0; i < 8; i++) {
      await first.data.row('login_activities', {
        id: 20_000 + i * 5_000,
        user_email: `spread${i}@example.test`,
        authentication_method: 'password',
        ip_address: '198.51.100.1',
        otp_required: false,
        success: true,
        created_at: new Date(Date.UTC(2026, 5, 1, i)),
        organization_id: null,
      });
    }
    const total = async (app: TestApp, afterId: number) =>
      (
        await app
          .http()
          .get(`/v1/login_activities?success=true&after_id=${afterId}`)
          .set('Authorization', `Bearer ${token}`)
          .expect(200)
      ).headers['x-total-count'];
    // The first instance counts the histogram (in the background) and publishes it.
    expect(await total(first, 24_000)).toBe('7');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await total(first, 24_000)).toBe('7');
    // The second takes it from Redis, then works totals of other bounds out from its buckets.
    expect(await total(second, 30_000)).toBe('5');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await total(second, 40_000)).toBe('3');
    expect(await total(second, 50_000)).toBe('1');
  });

  it("shares marks: a deep page in name order on another instance starts from the first's", async () => {
    await first.data.many(60, (i) => first.data.user({ name: `Shared ${i % 7}` }));
    const path = '/v1/users?sort=name&limit=3&page=10';
    const page = async (app: TestApp) => {
      const watch = watchStatements(app.dataSource);
      const reply = await app.http().get(path).set('Authorization', `Bearer ${token}`).expect(200);
      const parameters = watch.parameterNames();
      watch.stop();
      return { ids: (reply.body.data as { id: number }[]).map((item) => item.id), parameters };
    };
    const marked = ({ parameters }: { parameters: string[][] }) =>
      parameters.some((names) => names.includes('cursor_value'));
    // The first instance takes the marks (in the background) and publishes them.
    expect(marked(await eventually(() => page(first), marked))).toBe(true);
    const seen: string[][] = [];
    const read = await eventually(async () => {
      const result = await page(second);
      seen.push(...result.parameters);
      return result;
    }, marked);
    // Read from Redis: the second instance took none itself.
    expect(seen.filter((names) => names.includes('marks_max_id'))).toEqual([]);
    const rows = await second.dataSource.query<{ id: number }[]>(
      'SELECT id FROM users ORDER BY name, id LIMIT 3 OFFSET 27',
    );
    expect(read.ids).toEqual(rows.map((row) => Number(row.id)));
    expect(marked(read)).toBe(true);
  });

  it('still answers with true totals when Redis is unreachable', async () => {
    const response = await redisDown
      .http()
      .get('/v1/login_activities?success=false&limit=3&page=3')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(response.headers['x-total-count']).toBe('7');
    expect(response.body.pagination.page_count).toBe(3);
    expect(response.body.data).toHaveLength(1);
  });
  it('counts by itself where a shared total is not one (another version, a damaged key)', async () => {
    const prefix = `listing-totals-redis-${process.pid}-${Date.now()}:`;
    const env = { REDIS_URL, COUNT_CACHE_TTL_MS: '60000', REDIS_KEY_PREFIX: prefix };
    const redis = new Redis(REDIS_URL);
    const path = '/v1/login_activities?success=false&limit=3&page=3';
    const publisher = await startTestApp({ env, database: first.database });
    try {
      await publisher.http().get(path).set('Authorization', `Bearer ${token}`).expect(200);
      const bases = await redis.keys(`${prefix}count:*:base`);
      expect(bases.length).toBeGreaterThan(0);
      for (const planted of [
        '{"count":7}',
        '{"total":-5,"maxId":0}',
        '{"total":"7","maxId":"x"}',
      ]) {
        for (const base of bases) {
          await redis.set(base, planted, 'PX', 60_000);
          await redis.set(base.replace(/:base$/, ':fresh'), '1', 'PX', 60_000);
        }
        // A new instance: nothing of its own cached, it reads what Redis holds.
        const reader = await startTestApp({ env, database: first.database });
        try {
          const response = await reader
            .http()
            .get(path)
            .set('Authorization', `Bearer ${token}`)
            .expect(200);
          expect({ planted, total: response.headers['x-total-count'] }).toEqual({
            planted,
            total: '7',
          });
          expect(response.body.pagination.page_count).toBe(3);
        } finally {
          await reader.close();
        }
      }
    } finally {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
      await publisher.close();
    }
  });
});
