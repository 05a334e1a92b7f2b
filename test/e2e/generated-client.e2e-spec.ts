import type { AddressInfo } from 'node:net';
import { createListingClient, ListingClient } from '../client/listing-client';
import { parseLinks, startTestApp, TestApp } from '../kit';

/**
 * A consumer's view: the client generated from the checked-in openapi.json walks every page of
 * both lists over real HTTP. If the document and the replies drift apart, the types or the
 * contract check on every reply fail here.
 */
describe('the generated client', () => {
  let kit: TestApp;
  let client: ListingClient;
  let userIds: number[];
  let activityIds: number[];

  beforeAll(async () => {
    kit = await startTestApp();
    const organization = await kit.data.organization();
    const users = await kit.data.many(23, () =>
      kit.data.user({ organization_id: organization.id }),
    );
    const activities = await kit.data.many(27, (i) =>
      kit.data.loginActivity(
        i % 3 === 0
          ? { success: false, authentication_method: 'oauth' }
          : { user: users[i % users.length] },
      ),
    );
    userIds = users.map((user) => user.id);
    activityIds = activities.map((activity) => activity.id);
    await kit.app.listen(0, '127.0.0.1');
    const { port } = kit.app.getHttpServer().address() as AddressInfo;
    client = createListingClient({
      baseUrl: `http://127.0.0.1:${port}`,
      token: await kit.token(),
      contract: kit.contract,
    });
  });
  afterAll(() => kit.close());

  it('walks every page of /v1/users', async () => {
    const seen: number[] = [];
    for (let page = 1; ; page++) {
      const { data, error, response } = await client.GET('/v1/users', {
        params: { query: { page, limit: 5, sort: 'id' } },
      });
      expect(error).toBeUndefined();
      expect(response.status).toBe(200);
      const body = data;
      if (!body || body.data.length === 0) break;
      expect(body.pagination).toEqual({ current_page: page, limit: 5, page_count: 5 });
      expect(response.headers.get('x-total-count')).toBe('23');
      seen.push(...body.data.map((user) => user.id));
      expect(body.data.every((user) => user.email.includes('@'))).toBe(true);
    }
    expect(seen).toEqual(userIds);
  });

  it('walks /v1/login_activities by following Link: rel="next" (an opaque cursor)', async () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    for (let step = 0; step < 20; step++) {
      const { data, error, response } = await client.GET('/v1/login_activities', {
        params: { query: { limit: 10, ...(cursor ? { cursor } : {}) } },
      });
      expect(error).toBeUndefined();
      const items = data?.data ?? [];
      if (items.length === 0) break;
      seen.push(...items.map((activity) => activity.id));
      for (const activity of items) {
        expect(activity.failure_reason === null).toBe(activity.success);
      }
      const next = parseLinks(response.headers.get('link') ?? undefined).next;
      cursor = new URL(next, 'http://x').searchParams.get('cursor') ?? undefined;
      expect(cursor).toBeDefined();
    }
    expect(seen).toEqual(activityIds);
  });

  it('gets the documented problem for a bad parameter', async () => {
    const { data, error, response } = await client.GET('/v1/users', {
      params: { query: { limit: 0 } },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    expect(error?.errors?.map((item) => item.parameter)).toEqual(['limit']);
  });
});
