import { createTestDatabase, TestDatabase } from '../kit';
import { runTs, startServerProcess, stopServerProcess } from '../kit/processes';

/**
 * The token value never reaches a log line, an error body or a metric: a real server process
 * logging at the most verbose level, every kind of request a token can be part of, then a grep
 * of everything the process wrote.
 */
describe('token secrecy in logs, error bodies and metrics', () => {
  let database: TestDatabase;
  let server: Awaited<ReturnType<typeof startServerProcess>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    env = {
      DATABASE_URL: '',
      ...database.env,
      DB_MIGRATIONS_RUN: 'true',
      SEED_DEMO_DATA: 'false',
      LOG_LEVEL: 'trace',
      LOG_PRETTY: 'false',
      RATE_LIMIT_PER_MINUTE: '6',
    };
    server = await startServerProcess(env);
  }, 60_000);
  afterAll(async () => {
    if (server) await stopServerProcess(server.process);
    await database?.drop();
  });

  const createToken = async (name: string, scopes: string) => {
    const created = await runTs(
      'src/cli/token.cli.ts',
      ['create', '--name', name, '--scopes', scopes],
      env,
    );
    expect(created.code).toBe(0);
    return created.stdout.trim().split('\n').pop()!;
  };

  it('appears in no log line, reply body or metric, whatever the request', async () => {
    const token = await createToken('secret-keeper', 'users:read');
    const unknown = `lsk_${'A'.repeat(43)}`;
    const call = (path: string, authorization?: string, method = 'GET', headers = {}) =>
      fetch(`${server.baseUrl}${path}`, {
        method,
        headers: { ...headers, ...(authorization ? { Authorization: authorization } : {}) },
      });
    const replies = [
      await call('/v1/users', `Bearer ${token}`),
      await call(`/v1/users?page=${token}`, `Bearer ${token}`),
      await call(`/v1/users?${token}=1`, `Bearer ${token}`),
      await call('/v1/login_activities', `Bearer ${token}`),
      await call(`/v1/users?access_token=${token}`),
      await call(`/v1/${token}`, `Bearer ${token}`),
      await call('/v1/users', `Bearer ${token}`, 'DELETE'),
      await call('/v1/users', `Bearer ${token}`), // the token's seventh request: over the limit
      await call('/v1/users', `Bearer ${unknown}`),
      await call('/v1/users', `Basic ${token}`),
      // Percent-encoded, the prefix too, and as a request id (echoed and logged when sane).
      await call(`/v1/%6Csk_${token.slice(4)}`),
      await call(`/v1/users?x=lsk%5F${token.slice(4)}`),
      await call('/v1/users', undefined, 'GET', { 'X-Request-Id': token }),
    ];
    const statuses = replies.map((reply) => reply.status);
    expect(statuses).toEqual([200, 400, 400, 403, 401, 404, 405, 429, 401, 401, 404, 401, 401]);
    for (const reply of replies) {
      const text = (await reply.text()) + JSON.stringify([...reply.headers]);
      expect(text).not.toContain(token.slice(4));
      expect(text).not.toContain(unknown.slice(4));
    }

    const metrics = await fetch(`${server.baseUrl}/metrics`);
    expect(metrics.status).toBe(200);
    const metricsText = await metrics.text();
    expect(metricsText).toContain('http_requests_total');
    expect(metricsText).not.toContain(token.slice(4));

    await stopServerProcess(server.process);
    const output = server.output();
    // The capture is real: the process logged the requests.
    for (const status of [200, 400, 401, 403, 404, 405, 429]) {
      expect(output).toContain(`"status":${status}`);
    }
    expect(output).toContain('/v1/login_activities');
    expect(output).toContain('/v1/lsk_[redacted]');
    expect(output).not.toContain(token.slice(4));
    expect(output).not.toContain(unknown.slice(4));
  }, 60_000);
});
