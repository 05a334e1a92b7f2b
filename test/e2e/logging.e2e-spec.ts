import { startTestApp, TestApp } from '../kit';

type Line = Record<string, unknown> & { req?: { id?: string } };
const byRequestId = (id: string) => (line: Line) => line.req?.id === id;

describe('request logs (captured from the real pino logger)', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp({ captureLogs: true })));
  afterAll(() => kit.close());

  it('writes one JSON line per request with id, method, route template, status, duration and token id', async () => {
    const { id, token } = await kit.tokenWithId({ scopes: ['users:read'] });
    await kit
      .http()
      .get('/v1/users?limit=5')
      .set('Authorization', `Bearer ${token}`)
      .set('X-Request-Id', 'log-ok')
      .expect(200);

    const line = await kit.waitForLog(byRequestId('log-ok'));
    expect(line).toMatchObject({
      level: 30,
      req: { id: 'log-ok', method: 'GET', path: '/v1/users' },
      route: '/v1/users',
      res: { status: 200 },
      token_id: Number(id),
    });
    expect(typeof line.responseTime).toBe('number');
    expect(kit.logs().filter(byRequestId('log-ok'))).toHaveLength(1);
    expect(kit.logText()).not.toContain(token);
  });

  it('never writes a rejected token either', async () => {
    const bogus = `lsk_${'A'.repeat(43)}`;
    await kit
      .http()
      .get('/v1/users')
      .set('Authorization', `Bearer ${bogus}`)
      .set('X-Request-Id', 'log-401')
      .expect(401);

    const line = await kit.waitForLog(byRequestId('log-401'));
    expect(line).toMatchObject({ route: '/v1/users', res: { status: 401 } });
    expect(line.token_id).toBeUndefined();
    expect(kit.logText()).not.toContain(bogus);
  });
});
