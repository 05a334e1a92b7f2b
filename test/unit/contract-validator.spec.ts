import { ContractValidator, Exchange } from '../kit/contract';

/** The contract check the test kit applies to every e2e reply: shown to fail where it must. */
describe('ContractValidator (against the checked-in openapi.json)', () => {
  const contract = ContractValidator.checkedIn();
  const user = {
    id: 1,
    name: 'Ada',
    email: 'ada@example.com',
    role_id: 2,
    role_name: 'admin',
    organization_id: 3,
    organization_name: 'Acme',
    created_at: '2026-11-21T09:30:00.000Z',
    updated_at: '2026-11-21T09:30:00.000Z',
  };
  const listHeaders = {
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': 'abc',
    'x-total-count': '1',
    etag: 'W/"1"',
    'cache-control': 'private, no-cache',
  };
  const page = (item: object): Exchange => ({
    method: 'GET',
    url: '/v1/users?limit=1',
    status: 200,
    headers: listHeaders,
    text: JSON.stringify({
      data: [item],
      pagination: { current_page: 1, limit: 1, page_count: 1 },
    }),
  });
  const problem = (status: number, url: string, headers: Record<string, string> = {}) => ({
    method: 'GET',
    url,
    status,
    headers: { 'content-type': 'application/problem+json', 'x-request-id': 'abc', ...headers },
    text: JSON.stringify({
      type: 'about:blank',
      title: 'x',
      status,
      detail: 'x',
      instance: url,
      request_id: 'abc',
    }),
  });

  it('accepts a conforming page', () => {
    expect(contract.check(page(user))).toEqual([]);
  });

  it('names the route, status and schema path of a field whose type drifted', () => {
    expect(() => contract.assert(page({ ...user, id: '1' }))).toThrow(
      /GET \/v1\/users\?limit=1 → 200[\s\S]*body\/data\/0\/id must be integer \(got "1"\)/,
    );
  });

  it('rejects a field the document does not name, a missing one and a wrong timestamp form', () => {
    const { email: _email, ...withoutEmail } = user;
    const problems = contract.check(
      page({ ...withoutEmail, extra: true, created_at: '2026-11-21T09:30:00Z' }),
    );
    expect(problems.join('\n')).toMatch(/has "extra", which the document does not name/);
    expect(problems.join('\n')).toMatch(/must have required property 'email'/);
    expect(problems.join('\n')).toMatch(/body\/data\/0\/created_at must match pattern/);
  });

  it('rejects an undocumented status, a missing required header and a wrong content type', () => {
    expect(contract.check({ ...page(user), status: 418 })[0]).toMatch(
      /status 418 is not documented for paths\["\/v1\/users"\].get/,
    );
    const { 'cache-control': _cacheControl, ...withoutCacheControl } = listHeaders;
    expect(contract.check({ ...page(user), headers: withoutCacheControl })).toEqual([
      expect.stringMatching(/header Cache-Control is required/),
    ]);
    expect(
      contract.check({ ...page(user), headers: { ...listHeaders, 'content-type': 'text/html' } }),
    ).toEqual([expect.stringMatching(/content type "text\/html" is not documented/)]);
  });

  it('holds problems to their headers: 401 needs WWW-Authenticate, 429 Retry-After', () => {
    expect(contract.check(problem(401, '/v1/users'))).toEqual([
      expect.stringMatching(/header WWW-Authenticate is required/),
    ]);
    expect(
      contract.check(problem(401, '/v1/users', { 'www-authenticate': 'Bearer realm="api"' })),
    ).toEqual([]);
    expect(contract.check(problem(401, '/v1/users', { 'www-authenticate': 'Basic' }))).toEqual([
      expect.stringMatching(/header WWW-Authenticate: "Basic" does not match/),
    ]);
    expect(
      contract.check({ ...page(user), headers: { ...listHeaders, ratelimit: 'remaining=5' } }),
    ).toEqual([expect.stringMatching(/header RateLimit: "remaining=5" does not match/)]);
    expect(contract.check(problem(429, '/v1/users', { 'retry-after': 'soon' }))).toEqual([
      expect.stringMatching(/header Retry-After: "soon" is not an integer/),
    ]);
  });

  it('holds unknown paths to the shared problem replies (404 and the like), and only those', () => {
    expect(contract.check(problem(404, '/v1/nope'))).toEqual([]);
    expect(contract.check(problem(400, '/v1/users%ZZ'))).toEqual([]);
    expect(contract.check({ ...problem(404, '/v1/nope'), text: '{}' }).length).toBeGreaterThan(0);
    expect(contract.check({ ...problem(200, '/v1/nope') })[0]).toMatch(/not in the document/);
  });

  it('expects 405 with Allow for methods a path does not support', () => {
    expect(
      contract.check({ ...problem(405, '/v1/users', { allow: 'GET, HEAD' }), method: 'POST' }),
    ).toEqual([]);
    expect(contract.check({ ...problem(404, '/v1/users'), method: 'DELETE' })[0]).toMatch(
      /DELETE is not documented for \/v1\/users, so it must answer 405/,
    );
  });
});
