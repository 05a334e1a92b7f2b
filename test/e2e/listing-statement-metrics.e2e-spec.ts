import { startTestApp, TestApp } from '../kit';

/** The sum of a metric's samples (every label set) in a Prometheus text exposition. */
function total(exposition: string, metric: string): number {
  return exposition
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`) || line.startsWith(`${metric} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/**
 * Every listing statement is counted in the database metrics, however it is sent: on MySQL the
 * listings run as prepared statements outside TypeORM's `query` (DB_PREPARED_STATEMENTS), where
 * 30 list requests once moved db_queries_total by 3.
 */
describe('database metrics count every listing statement', () => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startTestApp();
    for (let i = 0; i < 5; i++) await kit.data.user({ name: `User ${i}` });
    token = await kit.token({ scopes: ['users:read'] });
  });
  afterAll(() => kit.close());

  it('moves db_queries_total and db_query_duration_seconds by at least one a list request', async () => {
    const scrape = async () => (await kit.http().get('/metrics').expect(200)).text;
    const before = await scrape();
    const REQUESTS = 30;
    for (let i = 0; i < REQUESTS; i++) {
      // Totals and tokens are cached and first pages are one statement: one a request is left.
      await kit
        .http()
        .get(`/v1/users?limit=${(i % 3) + 1}`)
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
    }
    const after = await scrape();
    const moved = (metric: string) => total(after, metric) - total(before, metric);
    expect(moved('db_queries_total')).toBeGreaterThanOrEqual(REQUESTS);
    expect(moved('db_query_duration_seconds_count')).toBeGreaterThanOrEqual(REQUESTS);
  });
});
