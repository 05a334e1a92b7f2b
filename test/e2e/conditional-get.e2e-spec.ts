import { startTestApp, TestApp, UserRow } from '../kit';

describe('conditional GET of list replies (ETag, If-None-Match, Cache-Control)', () => {
  let kit: TestApp;
  let token: string;
  let users: UserRow[];

  beforeAll(async () => {
    // Totals are counted afresh on every request, so a changed total shows at once.
    kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: '0' } });
    token = await kit.token();
    const organization = await kit.data.organization();
    users = await kit.data.many(45, (i) =>
      kit.data.user({ name: `User ${i}`, organization_id: organization.id }),
    );
    await kit.data.many(3, (i) => kit.data.loginActivity({ user: users[i] }));
  });

  afterAll(() => kit.close());

  const get = (path: string, ifNoneMatch?: string) => {
    const request = kit.http().get(path).set('Authorization', `Bearer ${token}`);
    return ifNoneMatch === undefined ? request : request.set('If-None-Match', ifNoneMatch);
  };

  it.each(['/v1/users', '/v1/login_activities'])(
    '%s carries a weak ETag (the same for every content coding) and Cache-Control: private, no-cache',
    async (path) => {
      const response = await get(path).expect(200);
      expect(response.headers.etag).toMatch(/^W\/"[A-Za-z0-9_-]{16,}"$/);
      expect(response.headers['cache-control']).toBe('private, no-cache');
      expect(response.headers.vary).toMatch(/\bAuthorization\b/);
      const again = await get(path).expect(200);
      expect(again.headers.etag).toBe(response.headers.etag);
    },
  );

  it('answers 304 without a body when If-None-Match holds the ETag', async () => {
    const first = await get('/v1/users?limit=10&sort=-name').expect(200);
    const etag = first.headers.etag;
    const opaque = etag.replace(/^W\//, '');
    for (const header of [etag, opaque, `"nope", ${etag}`, `"a","b",${opaque}`, '*']) {
      const response = await get('/v1/users?limit=10&sort=-name', header);
      expect({ header, status: response.status }).toEqual({ header, status: 304 });
      expect(response.text ?? '').toBe('');
      expect(response.headers['content-length'] ?? '0').toBe('0');
      expect(response.headers['content-type']).toBeUndefined();
      expect(response.headers.etag).toBe(etag);
      expect(response.headers['cache-control']).toBe('private, no-cache');
      // RFC 9110 15.4.5: a 304 carries the Vary its 200 would have.
      expect(response.headers.vary).toBe(first.headers.vary);
    }
    const head = await kit
      .http()
      .head('/v1/users?limit=10&sort=-name')
      .set('Authorization', `Bearer ${token}`)
      .set('If-None-Match', etag);
    expect(head.status).toBe(304);
  });

  it('answers 304 whatever Cache-Control the request carries (fetch() adds no-cache)', async () => {
    const first = await get('/v1/login_activities').expect(200);
    for (const cacheControl of ['no-cache', 'max-age=0', 'no-store']) {
      const response = await get('/v1/login_activities', first.headers.etag).set(
        'Cache-Control',
        cacheControl,
      );
      expect({ cacheControl, status: response.status }).toEqual({ cacheControl, status: 304 });
    }
    await get('/v1/login_activities')
      .set('Pragma', 'no-cache')
      .set('If-None-Match', first.headers.etag)
      .expect(304);
  });

  it('spends no request of the rate-limit budget on a 304 (CONTRACT §3)', async () => {
    const remaining = (response: { headers: Record<string, string> }) =>
      Number(/r=(\d+)/.exec(response.headers.ratelimit)![1]);
    const first = await get('/v1/users?limit=3').expect(200);
    const notModified = await get('/v1/users?limit=3', first.headers.etag).expect(304);
    expect(notModified.headers['ratelimit-policy']).toBeDefined();
    expect(remaining(notModified)).toBe(remaining(first));
    await get('/v1/users?limit=3', first.headers.etag).expect(304);
    const after = await get('/v1/users?limit=3').expect(200);
    expect(remaining(after)).toBe(remaining(first) - 1);
  });

  it('answers 200 with the page when If-None-Match holds another ETag', async () => {
    const response = await get('/v1/users?limit=10', '"something-else", W/"other"').expect(200);
    expect(response.body.data).toHaveLength(10);
  });

  it('gives each page, order and filter its own ETag', async () => {
    const tags = new Set<string>();
    for (const query of ['limit=10', 'limit=10&page=2', 'limit=10&sort=-id', 'limit=11']) {
      tags.add((await get(`/v1/users?${query}`).expect(200)).headers.etag);
    }
    expect(tags.size).toBe(4);
    const page2 = await get('/v1/users?limit=10&page=2').expect(200);
    await get('/v1/users?limit=10', page2.headers.etag).expect(200);
  });

  it('changes the ETag when a row of the page changes', async () => {
    const before = await get('/v1/users?limit=5&sort=-id').expect(200);
    await kit.data.user({ name: 'Newcomer', organization_id: users[0].organization_id });
    const after = await get('/v1/users?limit=5&sort=-id', before.headers.etag).expect(200);
    expect(after.body.data[0].name).toBe('Newcomer');
    expect(after.headers.etag).not.toBe(before.headers.etag);
    await get('/v1/users?limit=5&sort=-id', after.headers.etag).expect(304);
  });

  it('changes the ETag when only the total changes (X-Total-Count is part of the reply)', async () => {
    const before = await get('/v1/users?limit=20').expect(200);
    const total = Number(before.headers['x-total-count']);
    await kit.data.user({ organization_id: users[0].organization_id });
    const after = await get('/v1/users?limit=20', before.headers.etag).expect(200);
    expect(after.body).toEqual(before.body);
    expect(after.headers['x-total-count']).toBe(String(total + 1));
    expect(after.headers.etag).not.toBe(before.headers.etag);
  });

  it('gives no ETag to error replies', async () => {
    const response = await get('/v1/users?limit=0').expect(400);
    expect(response.headers.etag).toBeUndefined();
    const unauthorized = await kit.http().get('/v1/users').expect(401);
    expect(unauthorized.headers.etag).toBeUndefined();
  });
});
