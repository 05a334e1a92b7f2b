import { startTestApp, TestApp } from '../kit';

describe('authentication (RFC 6750)', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startTestApp();
  });
  afterAll(() => kit.close());

  const expectProblem = (body: Record<string, unknown>, status: number) => {
    expect(body).toMatchObject({ type: 'about:blank', status });
    expect(typeof body.detail).toBe('string');
    expect(typeof body.request_id).toBe('string');
  };

  it.each(['/v1/users', '/v1/login_activities'])(
    '%s without Authorization answers 401 with a bare Bearer challenge',
    async (path) => {
      const response = await kit.http().get(path).expect(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="api"');
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expectProblem(response.body, 401);
    },
  );

  it.each([
    ['an unknown token', 'Bearer lsk_0000000000000000000000000000000000000000000'],
    ['a token of the wrong shape', 'Bearer not-a-token'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['a scheme without a token', 'Bearer'],
    ['an empty header', ''],
    ['two tokens', 'Bearer a b'],
  ])('%s answers 401 invalid_token', async (_label, header) => {
    const response = await kit.http().get('/v1/users').set('Authorization', header).expect(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="api", error="invalid_token"');
    expectProblem(response.body, 401);
  });

  it('refuses an unknown token again, from its cached look-up, with the very same reply', async () => {
    const header = `Bearer lsk_${'u'.repeat(43)}`;
    const refuse = () =>
      kit.http().get('/v1/users?limit=3').set('Authorization', header).expect(401);
    // The first refusal is the guard's (it looks the token up); the second is refused from the
    // cached miss ahead of Nest's pipeline (bearerPrecheck): neither side may tell them apart.
    const [first, second] = [await refuse(), await refuse()];
    const headers = (response: typeof first) => {
      // What differs from one request to the next: its date, its id, the budget left.
      const { date: _date, 'x-request-id': _id, ratelimit: _left, ...rest } = response.headers;
      return rest;
    };
    expect(headers(second)).toEqual(headers(first));
    expect({ ...second.body, request_id: 'id' }).toEqual({ ...first.body, request_id: 'id' });
    expect(first.body).toMatchObject({ instance: '/v1/users?limit=3' });
  });

  it('answers 404, not 401, for a /v1 path no route serves, with or without a token', async () => {
    await kit.http().get('/v1/nothing').expect(404);
    await kit.http().get('/v1/nothing').set('Authorization', 'Bearer nope').expect(404);
  });

  it('accepts a valid token, with the scheme in any case', async () => {
    const token = await kit.token();
    await kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`).expect(200);
    await kit.http().get('/v1/users').set('Authorization', `bearer ${token}`).expect(200);
    // RFC 9110 11.4: one or more spaces after the scheme.
    await kit.http().get('/v1/users').set('Authorization', `Bearer   ${token}`).expect(200);
  });

  it.each([
    ['a moment ago', -60_000],
    ['now (0 ms to live)', 0],
  ])('refuses a token that expired %s', async (_label, expiresInMs) => {
    const token = await kit.token({ expiresInMs });
    const response = await kit
      .http()
      .get('/v1/users')
      .set('Authorization', `Bearer ${token}`)
      .expect(401);
    expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('refuses a revoked token', async () => {
    const { id, token } = await kit.tokenWithId();
    await kit.revoke(id);
    const response = await kit
      .http()
      .get('/v1/login_activities')
      .set('Authorization', `Bearer ${token}`)
      .expect(401);
    expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('never accepts a token from the query string', async () => {
    const token = await kit.token();
    const response = await kit.http().get(`/v1/users?access_token=${token}`).expect(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="api"');
  });

  it('answers a valid token sent with an access_token parameter as the unknown parameter it is', async () => {
    const token = await kit.token();
    const response = await kit.as(token).get('/v1/users?access_token=x').expect(400);
    expect(response.body.errors).toEqual([
      { parameter: 'access_token', message: expect.any(String) },
    ]);
  });

  it('stores only the SHA-256 hash of a token', async () => {
    const token = await kit.token();
    const rows: { token_hash: string }[] = await kit.dataSource.query(
      'SELECT token_hash FROM api_tokens',
    );
    const { createHash } = await import('node:crypto');
    const hash = createHash('sha256').update(token).digest('hex');
    expect(rows.map((row) => row.token_hash)).toContain(hash);
    const dump = JSON.stringify(await kit.dataSource.query('SELECT * FROM api_tokens'));
    expect(dump).not.toContain(token.slice(4));
  });

  it('checks tokens against its own database when two apps share one process', async () => {
    // Passport's strategy registry is process-wide; each app must still use its own tokens.
    const other = await startTestApp();
    try {
      const mine = await kit.token();
      const theirs = await other.token();
      const get = (app: TestApp, token: string) =>
        app.http().get('/v1/users').set('Authorization', `Bearer ${token}`);
      await get(kit, mine).expect(200);
      await get(other, theirs).expect(200);
      await get(kit, theirs).expect(401);
      await get(other, mine).expect(401);
    } finally {
      await other.close();
    }
  });

  it('leaves the health probes and API docs public', async () => {
    await kit.http().get('/health/live').expect(200);
    await kit.http().get('/health/ready').expect(200);
    await kit.http().get('/openapi.json').expect(200);
  });
});
