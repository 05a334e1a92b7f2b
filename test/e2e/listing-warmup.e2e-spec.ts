import { startWarmedTestApp, TestApp, watchStatements } from '../kit';

/**
 * COUNT_CACHE_WARMUP: after a start, the totals and histograms of each listing, unfiltered and by
 * each value of its few-valued filters, are counted in the background, so that their first visit
 * counts only the rows appended since, never the whole table.
 */
describe('the count cache warm-up after a start (COUNT_CACHE_WARMUP)', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeded) => {
        const user = await seeded.data.user();
        await seeded.data.many(60, (i) =>
          seeded.data.loginActivity({
            user,
            success: i % 3 !== 0,
            created_at: new Date(Date.UTC(2026, 5, 1) + i * 600_000),
          }),
        );
      },
      { env: { TAIL_HOLDBACK_MS: '0' } },
    );
  }, 60_000);

  afterAll(async () => {
    await kit?.close();
  });

  it.each([
    ['/v1/login_activities', 60],
    ['/v1/login_activities?success=false&sort=-created_at', 20],
    ['/v1/login_activities?success=true', 40],
    ['/v1/login_activities?authentication_method=password&sort=created_at', 60],
    [
      `/v1/login_activities?created_from=${encodeURIComponent('2026-06-01T02:05:00Z')}&sort=created_at`,
      47,
    ],
    ['/v1/users?sort=-updated_at', 1],
  ])('%s: its first visit counts no whole total', async (path, total) => {
    const token = await kit.token();
    const statements = watchStatements(kit.dataSource);
    try {
      const reply = await kit.as(token).get(path).expect(200);
      expect(reply.headers['x-total-count']).toBe(String(total));
      // Counts of appended ids (`t.id >`) and of a window's partial hours (both bounds) only.
      const whole = statements
        .statements()
        .filter((sql) => /^SELECT COUNT\(\*\)/.test(sql))
        .filter(
          (sql) => !/t\.id >/.test(sql) && !/t\.`created_at` >= .*t\.`created_at` < /.test(sql),
        );
      expect(whole).toEqual([]);
    } finally {
      statements.stop();
    }
  });
});
