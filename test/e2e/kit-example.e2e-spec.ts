import { startTestApp, TestApp, walkIds } from '../kit';

describe('users of one organization', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp()));
  afterAll(() => kit?.close()); // `?.`: a failed boot has no kit to close

  it('lists only its own users', async () => {
    const org = await kit.data.organization();
    const ada = await kit.data.user({ organization_id: org.id, name: 'Ada' });
    const api = await kit.client({ scopes: ['users:read'], organizationId: org.id });
    const { body } = await api.get('/v1/users?q=ad').expect(200);
    expect(body.data.map((u: { id: number }) => u.id)).toEqual([ada.id]);
    expect(await walkIds(api, '/v1/users?limit=1')).toEqual([ada.id]);
  });
});
