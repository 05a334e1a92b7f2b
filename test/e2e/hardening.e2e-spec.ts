import { request as httpRequest, Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { startTestApp, TestApp } from '../kit';

describe('HTTP hardening', () => {
  let kit: TestApp;
  let withCors: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startTestApp();
    withCors = await startTestApp({
      database: kit.database,
      env: { CORS_ORIGINS: 'https://app.example.com, https://admin.example.com' },
    });
    token = await kit.token();
  });
  afterAll(async () => {
    await withCors?.close();
    await kit?.close();
  });

  it.each([
    ['a listing', '/v1/users', true, 200],
    ['a 401', '/v1/users', false, 401],
    ['a 404', '/v1/nothing', true, 404],
    ['a health probe', '/health/live', false, 200],
  ])('sends the security headers and no X-Powered-By on %s', async (_label, path, auth, status) => {
    const request = kit.http().get(path);
    const response = await (auth ? request.set('Authorization', `Bearer ${token}`) : request);
    expect(response.status).toBe(status);
    expect(response.headers['x-powered-by']).toBeUndefined();
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
    expect(response.headers['cross-origin-resource-policy']).toBe('same-origin');
    // Helmet's headers for HTML pages are left out: a JSON API has no use for them.
    for (const header of ['x-xss-protection', 'x-dns-prefetch-control', 'origin-agent-cluster']) {
      expect(response.headers[header]).toBeUndefined();
    }
  });

  it('has CORS off unless CORS_ORIGINS is set', async () => {
    const simple = await kit
      .http()
      .get('/v1/users')
      .set('Origin', 'https://app.example.com')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(simple.headers['access-control-allow-origin']).toBeUndefined();

    const preflight = await kit
      .http()
      .options('/v1/users')
      .set('Origin', 'https://app.example.com')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization');
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(preflight.headers['access-control-allow-headers']).toBeUndefined();
  });

  it('answers preflights and exposes the listing headers to configured origins only', async () => {
    const preflight = await withCors
      .http()
      .options('/v1/users')
      .set('Origin', 'https://admin.example.com')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization')
      .expect(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://admin.example.com');
    expect(preflight.headers['access-control-allow-methods']).toBe('GET,HEAD');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/Authorization/);

    const simple = await withCors
      .http()
      .get('/v1/users')
      .set('Origin', 'https://app.example.com')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(simple.headers['access-control-allow-origin']).toBe('https://app.example.com');
    for (const header of ['X-Total-Count', 'Link', 'RateLimit', 'Retry-After']) {
      expect(simple.headers['access-control-expose-headers']).toContain(header);
    }

    const stranger = await withCors
      .http()
      .get('/v1/users')
      .set('Origin', 'https://evil.example.net')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(stranger.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('with CORS on, answers only a preflight of a path served 204; any other OPTIONS as without CORS', async () => {
    // A preflight of no route: the 404 every method gets there.
    const unknown = await withCors
      .http()
      .options('/v1/nothing')
      .set('Origin', 'https://app.example.com')
      .set('Access-Control-Request-Method', 'GET')
      .expect(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(unknown.headers['access-control-allow-origin']).toBeUndefined();
    // An OPTIONS that is no preflight (no origin, or no method named) is a write's 405.
    for (const headers of [{}, { Origin: 'https://app.example.com' }]) {
      const plain = await withCors.http().options('/v1/users').set(headers).expect(405);
      expect(plain.headers.allow).toBe('GET, HEAD');
      expect(plain.headers['access-control-allow-origin']).toBeUndefined();
      // The same as without CORS.
      await kit.http().options('/v1/users').set(headers).expect(405);
    }
    await kit.http().options('/v1/nothing').expect(404);
    await withCors.http().options('/v1/nothing').expect(404);
  });

  it('limits header size and count, and how long a client may take to send a request', async () => {
    const server = kit.app.getHttpServer() as Server & { maxHeaderSize?: number };
    expect(server.maxHeaderSize).toBe(16 * 1024);
    // Counted by the service (Node would drop the fields past its count silently).
    expect(server.maxHeadersCount).toBe(0);
    expect(server.headersTimeout).toBe(10_000);
    expect(server.requestTimeout).toBe(30_000);

    const response = await kit
      .http()
      .get('/v1/users')
      .set('Authorization', `Bearer ${token}`)
      .set('X-Filler', 'x'.repeat(17 * 1024));
    expect(response.status).toBe(431);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.headers['x-request-id']).toBe(response.body.request_id);
  });

  /**
   * What the server sends back on one connection for `bytes`, until it closes it. `halfClose`
   * ends the client's side after them; a request that reads the database must keep it open (a
   * client gone is an abandoned request) and say `Connection: close`.
   */
  async function rawExchange(bytes: string, halfClose = true): Promise<string> {
    const server = kit.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      return await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () =>
          halfClose ? socket.end(Buffer.from(bytes)) : socket.write(Buffer.from(bytes)),
        );
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('error', reject);
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it.each([
    ['raw UTF-8 in the URL', 'GET /v1/users?q=\u0141u HTTP/1.1', 400, /percent-encode/],
    ['an invalid method', 'G(T /v1/users HTTP/1.1', 400, /not valid HTTP/],
  ])(
    'answers a request the HTTP parser refuses (%s) with problem+json and a request id',
    async (_label, requestLine, status, detail) => {
      const reply = await rawExchange(
        `${requestLine}\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      const [head, body] = reply.split('\r\n\r\n');
      expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(head).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
      const problem = JSON.parse(body) as { status: number; detail: string; request_id: string };
      expect(problem).toMatchObject({
        type: 'about:blank',
        status,
        instance: `urn:uuid:${problem.request_id}`,
      });
      expect(head).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/);
      expect(problem.detail).toMatch(detail);
      expect(head).toContain(`X-Request-Id: ${problem.request_id}`);
    },
  );

  it("sends Express replies' security headers on the replies written past it: the parser's, CONNECT's, 417", async () => {
    const served = await kit.http().get('/v1/nothing').expect(404);
    const names = [
      'strict-transport-security',
      'x-content-type-options',
      'x-frame-options',
      'referrer-policy',
      'cross-origin-resource-policy',
    ];
    for (const request of [
      'G(T /v1/users HTTP/1.1\r\nHost: x\r\n\r\n',
      'CONNECT /docs HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /v1/users HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n',
    ]) {
      const [head] = (await rawExchange(request)).split('\r\n\r\n');
      const fields = Object.fromEntries(
        head
          .split('\r\n')
          .slice(1)
          .map((line) => [
            line.slice(0, line.indexOf(':')).toLowerCase(),
            line.slice(line.indexOf(':') + 1).trim(),
          ]),
      );
      for (const name of names)
        expect([request, name, fields[name]]).toEqual([request, name, served.headers[name]]);
    }
  });

  it.each(['CONNECT localhost:3000 HTTP/1.1', 'CONNECT /docs HTTP/1.1'])(
    'answers %s with a 405 problem and Allow, as any write method (Node would close it unanswered)',
    async (requestLine) => {
      const reply = await rawExchange(
        `${requestLine}\r\nHost: x\r\nX-Request-Id: trace-connect\r\n\r\n`,
      );
      const [head, body] = reply.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1.1 405 /);
      expect(head).toContain('\r\nAllow: GET, HEAD\r\n');
      expect(head).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
      expect(JSON.parse(body)).toMatchObject({ status: 405, request_id: 'trace-connect' });
    },
  );

  it('answers an Expect it cannot meet with a 417 problem and a request id', async () => {
    const reply = await rawExchange(
      `GET /v1/users HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nX-Request-Id: trace-417\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    const [head, body] = reply.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1.1 417 /);
    expect(head).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
    const problem = JSON.parse(body) as { status: number; request_id: string };
    expect(problem).toMatchObject({
      status: 417,
      request_id: 'trace-417',
      instance: expect.stringMatching(/^urn:uuid:[0-9a-f-]{36}$/),
    });
    expect(head).toContain('X-Request-Id: trace-417');
  });

  it('answers an HTTP/1.1 request without Host, or with an invalid one, with a 400 problem and a request id', async () => {
    const reply = await rawExchange(
      `GET /v1/users HTTP/1.1\r\nX-Request-Id: trace-host\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    const [head, body] = reply.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1.1 400 /);
    expect(head).toMatch(/\r\nContent-Type: application\/problem\+json/i);
    expect(JSON.parse(body)).toMatchObject({
      status: 400,
      detail: expect.stringMatching(/Host header/),
      request_id: 'trace-host',
    });
    const twice = await rawExchange(
      `GET /v1/users HTTP/1.1\r\nHost: x\r\nHost: y\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    expect(twice).toMatch(/^HTTP\/1\.1 400 /);
    expect(twice).toContain('more than one Host header');
    const invalid = await rawExchange(
      `GET /v1/users HTTP/1.1\r\nHost: a, b\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    expect(invalid).toMatch(/^HTTP\/1\.1 400 /);
    expect(invalid).toContain('The Host header is not a host');
    for (const host of ['[::1]:3000', 'api.example:8080', 'a%41,b', '']) {
      // Not half-closed: a server may close a half-closed connection before a slow reply.
      const served = await rawExchange(
        `GET /v1/users?limit=1 HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\nAuthorization: Bearer ${token}\r\n\r\n`,
        false,
      );
      expect([host, served.slice(0, 15)]).toEqual([host, 'HTTP/1.1 200 OK']);
    }
    // HTTP/1.0 has no Host to require.
    const older = await rawExchange(
      `GET /v1/users?limit=1 HTTP/1.0\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      false,
    );
    expect(older).toMatch(/^HTTP\/1.1 200 /);
  });

  it('closes, never writes into, a connection whose earlier response is still being sent', async () => {
    // Pipelined: the parser refuses the second request while the first is being answered.
    const reply = await rawExchange(
      `GET /v1/users?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n` +
        'G(T /v1/users HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    expect(reply).not.toMatch(/^HTTP\/1\.1 400 /);
    expect(reply).not.toContain('problem+json');
  });

  it('refuses more than one Authorization header with 400, whichever comes first', async () => {
    const other = `lsk_${'A'.repeat(43)}`;
    for (const [first, second] of [
      [token, other],
      [other, token],
    ]) {
      const reply = await rawExchange(
        `GET /v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${first}\r\n` +
          `authorization: Bearer ${second}\r\nConnection: close\r\n\r\n`,
      );
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(reply).toContain('more than one Authorization header');
    }
    // Past 100 fields (which Node would drop, a second Authorization among them): 431.
    const fillers = Array.from({ length: 130 }, (_, i) => `X-F${i}: 1\r\n`).join('');
    const crowded = await rawExchange(
      `GET /v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n${fillers}` +
        `Authorization: Bearer lsk_${'A'.repeat(43)}\r\nConnection: close\r\n\r\n`,
    );
    expect(crowded).toMatch(/^HTTP\/1\.1 431 /);
    // Refused before the rate limit reads a token: no budget announced, none spent.
    expect(crowded).not.toMatch(/\r\nRateLimit:/i);
    expect(crowded).toContain('more than 100 header fields');
  });

  it('links and names only paths for an absolute-form request target, never its host', async () => {
    const reply = await rawExchange(
      `GET http://elsewhere.example/v1/users?limit=1 HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
      false,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(reply).toMatch(/\r\nLink: <\/v1\/users\?/);
    const missing = await rawExchange(
      `GET http://elsewhere.example/v1/nowhere HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    );
    expect(missing).toContain('"instance":"/v1/nowhere"');
    const networkPath = await rawExchange(
      `GET //elsewhere.example/v1/nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(networkPath).toContain('"instance":"/elsewhere.example/v1/nowhere"');
    expect(reply + missing + networkPath).not.toContain('//elsewhere.example');
  });

  /** A listing request that carries a body, which no route reads. */
  const getUsersWithBody = (contentType: string, body: string) =>
    kit
      .http()
      .get('/v1/users')
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', contentType)
      .send(body);

  it('refuses a body over 1 kB with 413 before reading it', async () => {
    const response = await getUsersWithBody('text/plain', 'x'.repeat(2048));
    expect(response.status).toBe(413);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    // RFC 9110's reason phrase, not RFC 7231's "Payload Too Large" that Node still has.
    expect(JSON.parse(response.text)).toMatchObject({ title: 'Content Too Large', status: 413 });
  });

  it('never parses a small body: malformed JSON on a read route is ignored, not a 400', async () => {
    const response = await getUsersWithBody('application/json', '{"page": ');
    expect(response.status).toBe(200);
    expect(response.body).toHaveProperty('pagination');
  });

  it('refuses a chunked body (of unknown length) with 413', async () => {
    const server = kit.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const status = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(
          {
            host: '127.0.0.1',
            port,
            path: '/v1/users',
            headers: { Authorization: `Bearer ${token}`, 'Transfer-Encoding': 'chunked' },
          },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        request.on('error', reject);
        request.write('x'.repeat(100));
        request.end();
      });
      expect(status).toBe(413);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('never puts the token in an error body or header', async () => {
    const { id, token: revoked } = await kit.tokenWithId({ scopes: ['users:read'] });
    const forbidden = await kit
      .http()
      .get('/v1/login_activities')
      .set('Authorization', `Bearer ${revoked}`)
      .expect(403);
    await kit.dataSource.query('UPDATE api_tokens SET revoked_at = ? WHERE id = ?', [
      '2026-01-01 00:00:00.000',
      id,
    ]);
    const replies = [forbidden];
    replies.push(
      await kit.http().get('/v1/users?limit=0').set('Authorization', `Bearer ${revoked}`),
      await kit.http().get('/v1/users').set('Authorization', `Bearer ${revoked}x`),
      await kit.http().get('/v1/nothing').set('Authorization', `Bearer ${revoked}`),
      await kit.http().post('/v1/users').set('Authorization', `Bearer ${revoked}`),
    );
    for (const reply of replies) {
      expect(reply.status).toBeGreaterThanOrEqual(400);
      expect(reply.text + JSON.stringify(reply.headers)).not.toContain(revoked.slice(4));
    }
  });
});
