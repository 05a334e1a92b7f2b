import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { snapshotTables, startTestApp, TestApp } from '../kit';

describe('errors (RFC 9457 problem details)', () => {
  let kit: TestApp;
  let token: string;
  let before: Record<string, string>;

  beforeAll(async () => {
    kit = await startTestApp();
    token = await kit.token();
    const user = await kit.data.user();
    await kit.data.many(3, () => kit.data.loginActivity({ user }));
    before = await snapshotTables(kit.dataSource);
  });
  afterAll(() => kit.close());

  const get = (path: string) => kit.http().get(path).set('Authorization', `Bearer ${token}`);

  it('answers a bad limit with the documented problem body', async () => {
    const response = await get('/v1/users?limit=500').expect(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'limit must be an integer between 1 and 100',
      instance: '/v1/users?limit=500',
      request_id: response.headers['x-request-id'],
      errors: [{ parameter: 'limit', message: 'must be an integer between 1 and 100' }],
    });
  });

  it.each([
    ['page=abc', 'page'],
    ['page=1.5', 'page'],
    ['page=0', 'page'],
    ['page=-1', 'page'],
    ['page=2147483648', 'page'],
    ['page=99999999999999999999', 'page'],
    ['page=', 'page'],
    ['page=%201', 'page'],
    ['page=0x10', 'page'],
    ['limit=1e3', 'limit'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['page=1&page=2', 'page'],
    ['page[]=1', 'page[]'],
    ['pgae=2', 'pgae'],
    ['sort=password', 'sort'],
    ['sort=', 'sort'],
    ['created_from=yesterday', 'created_from'],
    ['created_to=2026-02-31', 'created_to'],
    ['after_id=-1', 'after_id'],
  ])('/v1/users?%s answers 400 naming %s', async (query, parameter) => {
    const response = await get(`/v1/users?${query}`).expect(400);
    expect(response.body.errors).toEqual([
      { parameter, message: expect.any(String) as unknown as string },
    ]);
    expect(response.body.detail).toContain(parameter);
  });

  it.each([
    ['success=yes', 'success'],
    ['authentication_method=telepathy', 'authentication_method'],
    ['limit=100&page=1&user_id=abc', 'user_id'],
  ])('/v1/login_activities?%s answers 400 naming %s', async (query, parameter) => {
    const response = await get(`/v1/login_activities?${query}`).expect(400);
    expect(response.body.errors.map((e: { parameter: string }) => e.parameter)).toEqual([
      parameter,
    ]);
  });

  it('lists every offending parameter at once', async () => {
    const response = await get('/v1/users?page=0&limit=abc&pgae=2&page_size=3').expect(400);
    const names = response.body.errors.map((e: { parameter: string }) => e.parameter).sort();
    expect(names).toEqual(['limit', 'page', 'page_size', 'pgae']);
  });

  it('answers 404 problem+json for an unknown route', async () => {
    const response = await get('/v1/nothing').expect(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 404, title: 'Not Found' });
  });

  it.each(['post', 'put', 'patch', 'delete'] as const)(
    '%s on a collection answers 405 with Allow: GET, HEAD',
    async (method) => {
      const response = await kit
        .http()
        [method]('/v1/users')
        .set('Authorization', `Bearer ${token}`)
        .send({ name: 'x' })
        .expect(405);
      expect(response.headers.allow).toBe('GET, HEAD');
      expect(response.body).toMatchObject({ status: 405, title: 'Method Not Allowed' });
    },
  );

  it.each([
    '/openapi.json',
    '/docs',
    '/docs/swagger-ui.css',
    '/docs/swagger-ui-init.js',
    '/V1/USERS',
    '/Health/Live',
  ])('answers 405 with Allow on %s too', async (path) => {
    const response = await kit.http().post(path).expect(405);
    expect(response.headers.allow).toBe('GET, HEAD');
  });

  it('answers a write below /docs 405 exactly where a GET is served, else 404', async () => {
    const folder = dirname(
      require.resolve('swagger-ui-dist/absolute-path.js', {
        paths: [dirname(require.resolve('@nestjs/swagger'))],
      }),
    );
    const paths = [
      ...readdirSync(folder).map((file) => `/docs/${file}`),
      '/docs/docs/swagger-ui-init.js',
      '/DOCS/Swagger-UI-Init.js',
      '/docs//swagger-ui.css',
      '/docs//',
      '/docs/x/../',
      '/docs/nothing/',
      '/docs/%73wagger-ui.css',
      '/docs/x/../swagger-ui.css',
      '/Docs/index.css',
      '/docs/SWAGGER-UI.CSS',
      '/docs/swagger-ui.css/',
      '/docs/swagger-ui.css/x',
      '/docs/no-such-file.js',
      '/docs/docs/index.css',
      '/nowhere',
    ];
    const answers = [];
    for (const path of paths) {
      const { status } = await kit.http().get(path);
      const write = await kit.http().post(path);
      answers.push({ path, get: status, post: write.status, allow: write.headers.allow });
    }
    const expected = answers.map(({ path, get }) =>
      get === 200
        ? { path, get, post: 405, allow: 'GET, HEAD' }
        : { path, get: 404, post: 404, allow: undefined },
    );
    expect(answers).toEqual(expected);
    // Both kinds are there: the list reaches what is served and what is not.
    expect(new Set(answers.map(({ get }) => get))).toEqual(new Set([200, 404]));
  });

  it('answers 406 when the client accepts no JSON', async () => {
    const response = await get('/v1/users').set('Accept', 'text/html').expect(406);
    expect(response.body).toMatchObject({ status: 406 });
    await get('/v1/users').set('Accept', 'application/*').expect(200);
    await get('/v1/users').set('Accept', '*/*').expect(200);
    // A problem is not a listing: a client that accepts only problems is not served a page.
    await get('/v1/users').set('Accept', 'application/problem+json').expect(406);
  });

  it.each([
    ['application/json; charset=utf-8', /^application\/json/],
    ['application/json;charset=UTF-8;v=1', /^application\/json/],
    ['application/x-ndjson; charset=utf-8', /^application\/x-ndjson/],
    ['application/json;q=0.4, application/x-ndjson;q=0.5;foo=bar', /^application\/x-ndjson/],
  ])('serves Accept: %s, whatever the parameters of its types', async (accept, type) => {
    const response = await get('/v1/users?limit=2').set('Accept', accept).expect(200);
    expect(response.headers['content-type']).toMatch(type);
  });

  it('echoes a given X-Request-Id and generates one otherwise', async () => {
    const echoed = await get('/v1/users').set('X-Request-Id', 'trace-123').expect(200);
    expect(echoed.headers['x-request-id']).toBe('trace-123');
    const generated = await get('/v1/users?limit=0').expect(400);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(generated.body.request_id).toBe(generated.headers['x-request-id']);
    const unauthorized = await kit.http().get('/v1/users').expect(401);
    expect(unauthorized.headers['x-request-id']).toBeDefined();
  });

  it('never reveals internals in a 500', async () => {
    await kit.dataSource.query('ALTER TABLE roles RENAME TO roles_gone');
    try {
      const response = await get('/v1/users').expect(500);
      expect(response.body).toEqual({
        type: 'about:blank',
        title: 'Internal Server Error',
        status: 500,
        detail: 'An unexpected error occurred.',
        instance: '/v1/users',
        request_id: expect.any(String) as unknown as string,
      });
      expect(JSON.stringify(response.body)).not.toMatch(/roles|SELECT|at \w+ \(/);
    } finally {
      await kit.dataSource.query('ALTER TABLE roles_gone RENAME TO roles');
    }
  });

  it('changed nothing in the database', async () => {
    expect(await snapshotTables(kit.dataSource)).toEqual(before);
  });
});
