import { startTestApp, TestApp, UserRow } from '../kit';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('GET /v1/users', () => {
  let kit: TestApp;
  let token: string;
  let users: UserRow[];

  beforeAll(async () => {
    kit = await startTestApp();
    token = await kit.token();
    const organization = await kit.data.organization({ name: 'Acme Corp' });
    const role = await kit.data.role({ name: 'admin' });
    users = await kit.data.many(45, (i) =>
      kit.data.user({
        name: `User ${i}`,
        organization_id: organization.id,
        role_id: role.id,
        created_at: new Date(Date.UTC(2026, 10, 21, 9, 30, i, 123)),
        updated_at: new Date(Date.UTC(2026, 10, 22, 9, 30, i, 456)),
      }),
    );
  });

  afterAll(() => kit.close());

  const get = (query = '') =>
    kit.http().get(`/v1/users${query}`).set('Authorization', `Bearer ${token}`);

  it('answers the envelope with exactly data and pagination, with defaults page 1 and limit 20', async () => {
    const response = await get()
      .expect(200)
      .expect('Content-Type', /application\/json/);
    expect(Object.keys(response.body).sort()).toEqual(['data', 'pagination']);
    expect(response.body.pagination).toEqual({ current_page: 1, limit: 20, page_count: 3 });
    expect(response.body.data).toHaveLength(20);
  });

  it('gives every field of a user with its type, from its tables', async () => {
    const response = await get('?limit=1').expect(200);
    const [item] = response.body.data;
    const expected = users[0];
    expect(item).toEqual({
      id: expected.id,
      name: 'User 0',
      email: expected.email,
      role_id: expected.role_id,
      role_name: 'admin',
      organization_id: expected.organization_id,
      organization_name: 'Acme Corp',
      created_at: '2026-11-21T09:30:00.123Z',
      updated_at: '2026-11-22T09:30:00.456Z',
    });
    for (const field of ['id', 'role_id', 'organization_id']) {
      expect(typeof item[field]).toBe('number');
    }
    for (const field of ['name', 'email', 'role_name', 'organization_name']) {
      expect(typeof item[field]).toBe('string');
    }
    expect(item.created_at).toMatch(ISO_MS);
    expect(item.updated_at).toMatch(ISO_MS);
  });

  it('orders by id ascending by default', async () => {
    const response = await get('?limit=100').expect(200);
    const ids = response.body.data.map((user: { id: number }) => user.id);
    expect(ids).toEqual(users.map((user) => user.id));
  });

  it('computes page_count as ceil(total / limit) and echoes page and limit', async () => {
    for (const [limit, pages] of [
      [1, 45],
      [7, 7],
      [15, 3],
      [44, 2],
      [45, 1],
      [100, 1],
    ]) {
      const response = await get(`?limit=${limit}&page=2`).expect(200);
      expect(response.body.pagination).toEqual({ current_page: 2, limit, page_count: pages });
      expect(response.headers['x-total-count']).toBe('45');
    }
  });

  it('fills the last page partly and answers a page past the end with an empty page', async () => {
    const last = await get('?limit=20&page=3').expect(200);
    expect(last.body.data).toHaveLength(5);
    const past = await get('?limit=20&page=4').expect(200);
    expect(past.body).toEqual({
      data: [],
      pagination: { current_page: 4, limit: 20, page_count: 3 },
    });
    const far = await get('?page=2147483647').expect(200);
    expect(far.body.data).toEqual([]);
  });

  it('yields every row exactly once when walking all pages', async () => {
    const seen: number[] = [];
    for (let page = 1; page <= 7; page++) {
      const response = await get(`?limit=7&page=${page}`).expect(200);
      seen.push(...response.body.data.map((user: { id: number }) => user.id));
    }
    expect(seen).toEqual(users.map((user) => user.id));
    expect(new Set(seen).size).toBe(45);
  });

  it('sends X-Total-Count and a Link header with first, prev, next and last', async () => {
    const response = await get('?limit=10&page=2').expect(200);
    expect(response.headers['x-total-count']).toBe('45');
    const link = response.headers.link;
    expect(link).toContain('</v1/users?limit=10&page=1>; rel="first"');
    expect(link).toContain('</v1/users?limit=10&page=1>; rel="prev"');
    expect(link).toMatch(/<\/v1\/users\?limit=10&cursor=[\w.-]+>; rel="next"/);
    expect(link).toContain('</v1/users?limit=10&page=5>; rel="last"');
    const first = await get('?limit=10').expect(200);
    expect(first.headers.link).not.toContain('rel="prev"');
    // In id order the last page links next for tail polling; in any other order it has none.
    const last = await get('?limit=10&page=5&sort=-id').expect(200);
    expect(last.headers.link).not.toContain('rel="next"');
    const tail = await get('?limit=10&page=5').expect(200);
    expect(tail.headers.link).toMatch(/cursor=[\w.-]+>; rel="next"/);
  });

  it('answers page_count 0 and no page links when nothing matches', async () => {
    const response = await get('?organization_id=999999').expect(200);
    expect(response.body).toEqual({
      data: [],
      pagination: { current_page: 1, limit: 20, page_count: 0 },
    });
    expect(response.headers['x-total-count']).toBe('0');
    expect(response.headers.link).toMatch(/^<[^>]*cursor=[\w.-]+>; rel="next"$/);
    const descending = await get('?organization_id=999999&sort=-id').expect(200);
    expect(descending.headers.link).toBeUndefined();
  });
});
