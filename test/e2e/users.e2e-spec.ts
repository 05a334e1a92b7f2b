import { ApiClient, startTestApp, TestApp, UserRow } from '../kit';

/**
 * What is the users listing's own: its fields, read from three tables. Paging, Link, the walk,
 * 400s, auth and scope are the shared contract (listing-contract.e2e-spec.ts).
 */
describe('GET /v1/users', () => {
  let kit: TestApp;
  let api: ApiClient;
  let users: UserRow[];

  beforeAll(async () => {
    kit = await startTestApp();
    api = await kit.client({ scopes: ['users:read'] });
    const organization = await kit.data.organization({ name: 'Acme Corp' });
    const role = await kit.data.role({ name: 'admin' });
    users = await kit.data.many(3, (i) =>
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

  it('gives every field of a user with its type, from its tables', async () => {
    const response = await api.get('/v1/users?limit=1').expect(200);
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
  });

  it('names each user its own role and organization', async () => {
    const globex = await kit.data.organization({ name: 'Globex' });
    const viewer = await kit.data.role({ name: 'viewer' });
    const grace = await kit.data.user({ organization_id: globex.id, role_id: viewer.id });
    const { body } = await api.get(`/v1/users?after_id=${users[2].id - 1}`).expect(200);
    expect(body.data).toEqual([
      expect.objectContaining({
        id: users[2].id,
        role_name: 'admin',
        organization_name: 'Acme Corp',
      }),
      expect.objectContaining({ id: grace.id, role_name: 'viewer', organization_name: 'Globex' }),
    ]);
  });

  it('gives an e-mail as stored, also one that is no address (the contract promises no format)', async () => {
    const shared = await kit.data.user({ email: 'front desk (shared)' });
    const { body } = await api.get(`/v1/users?after_id=${shared.id - 1}&limit=1`).expect(200);
    expect(body.data).toEqual([
      expect.objectContaining({ id: shared.id, email: 'front desk (shared)' }),
    ]);
  });
});
