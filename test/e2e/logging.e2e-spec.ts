import { Logger } from 'nestjs-pino';
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
    // Each key once: the raw line, not only its parse (where a repeated key would hide).
    const raw = kit
      .logText()
      .split('\n')
      .find((l) => l.includes('"id":"log-ok"'))!;
    expect(raw.match(/"route":/g)).toHaveLength(1);
    expect(raw).not.toContain('limit=5');
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

  it('logs requests no route matched without a route, and the probes with theirs', async () => {
    await kit.http().get('/v1/nothing-here?secret=1').set('X-Request-Id', 'log-404').expect(404);
    const notFound = await kit.waitForLog(byRequestId('log-404'));
    expect(notFound).toMatchObject({ req: { path: '/v1/nothing-here' }, res: { status: 404 } });
    expect(notFound.route).toBeUndefined();
    expect(kit.logText()).not.toContain('secret=1');

    // Replies given by middleware before routing are logged too.
    await kit.http().post('/v1/users').set('X-Request-Id', 'log-405').expect(405);
    expect(await kit.waitForLog(byRequestId('log-405'))).toMatchObject({
      req: { method: 'POST', path: '/v1/users' },
      res: { status: 405 },
    });

    await kit.http().get('/health/ready').set('X-Request-Id', 'log-ready').expect(200);
    expect(await kit.waitForLog(byRequestId('log-ready'))).toMatchObject({
      route: '/health/ready',
      level: 30,
    });
  });
});

describe('LOG_LEVEL', () => {
  let kit: TestApp;
  beforeAll(
    async () => (kit = await startTestApp({ captureLogs: true, env: { LOG_LEVEL: 'warn' } })),
  );
  afterAll(() => kit.close());

  it('drops lines below the configured level', async () => {
    await kit.http().get('/health/live').set('X-Request-Id', 'quiet').expect(200);
    await kit.http().get('/v1/users').set('X-Request-Id', 'loud').expect(401);
    // Lines are written when a response finishes; a later request's line shows the earlier ones are in.
    await new Promise((resolve) => setTimeout(resolve, 50));
    kit.app.get(Logger).warn('still heard');
    expect(kit.logs().filter((line) => (line.level as number) < 40)).toEqual([]);
    expect(kit.logs()).toEqual([expect.objectContaining({ level: 40, msg: 'still heard' })]);
  });
});
