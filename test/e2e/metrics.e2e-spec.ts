import { startTestApp, TestApp, testTarget } from '../kit';

/** `name{labels} value` lines of the exposition, without comments. */
const samples = (text: string) => text.split('\n').filter((line) => line && !line.startsWith('#'));

describe('/metrics', () => {
  let kit: TestApp;
  let token: string;
  let metrics: string;

  beforeAll(async () => {
    kit = await startTestApp();
    await kit.data.user();
    token = await kit.token();
    const api = () => kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
    await api().query({ limit: 1 }).expect(200);
    await api().query({ limit: 2, page: 2 }).expect(200);
    await api().query({ limit: 'abc' }).expect(400);
    await kit.http().get('/v1/users').expect(401);
    await kit.http().get(`/v1/users/${token}`).expect(404);
    await kit.http().delete('/v1/login_activities').expect(405);
    const res = await kit.http().get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
    metrics = res.text;
  });
  afterAll(() => kit.close());

  it('counts requests by method, route template and status', () => {
    const lines = samples(metrics);
    expect(lines).toContain('http_requests_total{method="GET",route="/v1/users",status="200"} 2');
    expect(lines).toContain('http_requests_total{method="GET",route="/v1/users",status="400"} 1');
    expect(lines).toContain('http_requests_total{method="GET",route="/v1/users",status="401"} 1');
    expect(lines).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(lines).toContain(
      'http_requests_total{method="DELETE",route="unmatched",status="405"} 1',
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^http_request_duration_seconds_count\{method="GET",route="\/v1\/users",status="200"\} 2$/,
      ),
    );
  });

  it('never puts a URL, a query string or a token in a label', () => {
    expect(metrics).not.toContain(token);
    expect(metrics).not.toContain('lsk_');
    const routes = new Set([...metrics.matchAll(/route="([^"]*)"/g)].map((match) => match[1]));
    expect([...routes].sort()).toEqual(['/v1/users', 'unmatched']);
  });

  it('has database query latency, pool gauges on MySQL, and process metrics', () => {
    const lines = samples(metrics);
    expect(lines).toContainEqual(
      expect.stringMatching(/^db_queries_total\{target="primary",outcome="ok"\} [1-9]/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^db_query_duration_seconds_count\{target="primary"\} [1-9]/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^process_cpu_user_seconds_total /));
    expect(lines).toContainEqual(expect.stringMatching(/^nodejs_eventloop_lag_seconds /));
    const pool = lines.filter((line) => line.startsWith('db_pool_'));
    if (testTarget === 'mysql') {
      expect(pool).toContainEqual(
        expect.stringMatching(/^db_pool_connections_open\{pool="primary"\} [1-9]/),
      );
      expect(pool).toContain(
        `db_pool_connections_max{pool="primary"} ${kit.config.database.poolSize}`,
      );
      expect(pool).toContain('db_pool_acquire_waiting{pool="primary"} 0');
    } else {
      // The embedded database is one in-process connection: there is no pool to report.
      expect(pool).toEqual([]);
    }
  });

  it('is public without METRICS_TOKEN and not part of the API document', async () => {
    const openapi = await kit.http().get('/openapi.json').expect(200);
    expect(Object.keys(openapi.body.paths)).not.toContain('/metrics');
    expect(Object.keys(openapi.body.paths).filter((path) => !path.startsWith('/v1/'))).toEqual([]);
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  const metricsToken = 'scrape-secret-0123456789';
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp({ env: { METRICS_TOKEN: metricsToken } })));
  afterAll(() => kit.close());

  it('needs that bearer token', async () => {
    const missing = await kit.http().get('/metrics').expect(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);

    const apiToken = await kit.token();
    for (const wrong of [apiToken, `${metricsToken}x`, metricsToken.slice(1)]) {
      const res = await kit
        .http()
        .get('/metrics')
        .set('Authorization', `Bearer ${wrong}`)
        .expect(401);
      expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    }

    const ok = await kit
      .http()
      .get('/metrics')
      .set('Authorization', `Bearer ${metricsToken}`)
      .expect(200);
    expect(ok.text).toContain('http_requests_total{method="GET",route="/metrics",status="401"} 4');
    expect(ok.text).not.toContain(metricsToken);
  });
});

describe('/metrics with METRICS_ENABLED=false', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp({ env: { METRICS_ENABLED: 'false' } })));
  afterAll(() => kit.close());

  it('is not served', async () => {
    const res = await kit.http().get('/metrics').expect(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
