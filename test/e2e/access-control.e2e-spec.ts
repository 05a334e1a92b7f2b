import { LoginActivityRow, OrganizationRow, startTestApp, TestApp, UserRow } from '../kit';

/**
 * Scopes (CONTRACT §4) and organization-scoped tokens: a token sees exactly what it was issued
 * for, and totals, page counts and links describe only that.
 */
describe('access control', () => {
  let kit: TestApp;
  let acme: OrganizationRow;
  let globex: OrganizationRow;
  let acmeUsers: UserRow[];
  let globexUsers: UserRow[];
  let acmeActivities: LoginActivityRow[];
  let orphanActivities: LoginActivityRow[];
  let platformToken: string;
  let acmeToken: string;
  let usersOnlyToken: string;
  let activitiesOnlyToken: string;

  beforeAll(async () => {
    kit = await startTestApp();
    acme = await kit.data.organization({ name: 'Acme' });
    globex = await kit.data.organization({ name: 'Globex' });
    const role = await kit.data.role({ name: 'member' });
    // Interleaved, so that an unscoped id range or offset would show the other organization.
    acmeUsers = [];
    globexUsers = [];
    for (let i = 0; i < 5; i++) {
      acmeUsers.push(await kit.data.user({ organization_id: acme.id, role_id: role.id }));
      if (i < 3)
        globexUsers.push(await kit.data.user({ organization_id: globex.id, role_id: role.id }));
    }
    acmeActivities = [];
    for (const user of acmeUsers.slice(0, 4)) {
      acmeActivities.push(await kit.data.loginActivity({ user }));
      await kit.data.loginActivity({ user: globexUsers[0] });
    }
    // Attempts with e-mails that match no user: no organization.
    orphanActivities = await kit.data.many(3, () => kit.data.loginActivity({ success: false }));

    platformToken = await kit.token();
    acmeToken = await kit.token({ organizationId: acme.id });
    usersOnlyToken = await kit.token({ scopes: ['users:read'] });
    activitiesOnlyToken = await kit.token({ scopes: ['login_activities:read'] });
  });
  afterAll(() => kit.close());

  const get = (path: string, token: string) =>
    kit.http().get(path).set('Authorization', `Bearer ${token}`);

  describe('scopes', () => {
    it.each([
      ['/v1/login_activities', 'login_activities:read', () => usersOnlyToken],
      ['/v1/users', 'users:read', () => activitiesOnlyToken],
    ])('%s without %s answers 403 insufficient_scope', async (path, scope, token) => {
      const response = await get(path, token()).expect(403);
      expect(response.headers['www-authenticate']).toBe(
        `Bearer realm="api", error="insufficient_scope", scope="${scope}"`,
      );
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.body).toMatchObject({
        type: 'about:blank',
        title: 'Forbidden',
        status: 403,
        instance: path,
      });
      expect(response.body.detail).toContain(scope);
      expect(typeof response.body.request_id).toBe('string');
      expect(JSON.stringify(response.body)).not.toContain(token());
    });

    it('lets a one-scope token read exactly its route', async () => {
      await get('/v1/users', usersOnlyToken).expect(200);
      await get('/v1/login_activities', activitiesOnlyToken).expect(200);
      await get('/v1/users', activitiesOnlyToken).expect(403);
      await get('/v1/login_activities', usersOnlyToken).expect(403);
    });

    it('checks the scope before validating parameters, so a 403 reveals nothing about them', async () => {
      await get('/v1/users?pgae=2', activitiesOnlyToken).expect(403);
    });

    it('documents each route’s scope and the bearer scheme in OpenAPI', async () => {
      const { body } = await kit.http().get('/openapi.json').expect(200);
      expect(body.components.securitySchemes.bearer).toMatchObject({
        type: 'http',
        scheme: 'bearer',
      });
      for (const [path, scope] of [
        ['/v1/users', 'users:read'],
        ['/v1/login_activities', 'login_activities:read'],
      ]) {
        const operation = body.paths[path].get;
        expect(operation.security).toEqual(expect.arrayContaining([{ bearer: expect.any(Array) }]));
        expect(JSON.stringify(operation)).toContain(scope);
      }
    });
  });

  describe('organization-scoped tokens', () => {
    it('see only their organization’s users, with totals, page_count and links for that set', async () => {
      const first = await get('/v1/users?limit=2', acmeToken).expect(200);
      expect(first.headers['x-total-count']).toBe('5');
      expect(first.body.pagination).toEqual({ current_page: 1, limit: 2, page_count: 3 });
      expect(first.body.data.map((user: UserRow) => user.id)).toEqual(
        acmeUsers.slice(0, 2).map((user) => user.id),
      );
      expect(first.headers.link).toContain('</v1/users?limit=2&page=3>; rel="last"');

      const last = await get('/v1/users?limit=2&page=3&sort=-id', acmeToken).expect(200);
      expect(last.body.data.map((user: UserRow) => user.id)).toEqual([acmeUsers[0].id]);
      expect(last.headers.link).not.toContain('rel="next"');

      const all = await get('/v1/users?limit=100&sort=-created_at', acmeToken).expect(200);
      expect(all.body.data).toHaveLength(5);
      for (const user of all.body.data) expect(user.organization_id).toBe(acme.id);

      // The platform-wide token sees both organizations.
      const platform = await get('/v1/users?limit=2', platformToken).expect(200);
      expect(platform.headers['x-total-count']).toBe('8');
    });

    it('get an empty page when they name another organization, never its data', async () => {
      const response = await get(`/v1/users?organization_id=${globex.id}`, acmeToken).expect(200);
      expect(response.body).toEqual({
        data: [],
        pagination: { current_page: 1, limit: 20, page_count: 0 },
      });
      expect(response.headers['x-total-count']).toBe('0');

      const own = await get(`/v1/users?organization_id=${acme.id}`, acmeToken).expect(200);
      expect(own.headers['x-total-count']).toBe('5');

      const byEmail = await get(`/v1/users?email=${globexUsers[1].email}`, acmeToken).expect(200);
      expect(byEmail.body.data).toEqual([]);
      const byId = await get(`/v1/users?after_id=${globexUsers[2].id - 1}`, acmeToken).expect(200);
      for (const user of byId.body.data) expect(user.organization_id).toBe(acme.id);
    });

    it('see only their organization’s login activities, never those of no organization', async () => {
      const response = await get('/v1/login_activities?limit=3', acmeToken).expect(200);
      expect(response.headers['x-total-count']).toBe(String(acmeActivities.length));
      expect(response.body.pagination).toEqual({ current_page: 1, limit: 3, page_count: 2 });
      expect(response.headers.link).toContain('</v1/login_activities?limit=3&page=2>; rel="last"');
      const page2 = await get('/v1/login_activities?limit=3&page=2', acmeToken).expect(200);
      const seen = [...response.body.data, ...page2.body.data];
      expect(seen.map((activity: LoginActivityRow) => activity.id)).toEqual(
        acmeActivities.map((activity) => activity.id),
      );
      const acmeIds = new Set(acmeUsers.map((user) => user.id));
      for (const activity of seen) expect(acmeIds.has(activity.user_id)).toBe(true);

      const otherUser = await get(
        `/v1/login_activities?user_id=${globexUsers[0].id}`,
        acmeToken,
      ).expect(200);
      expect(otherUser.body.data).toEqual([]);
      expect(otherUser.headers['x-total-count']).toBe('0');

      const orphan = await get(
        `/v1/login_activities?user_email=${orphanActivities[0].user_email}`,
        acmeToken,
      ).expect(200);
      expect(orphan.body.data).toEqual([]);
      const failed = await get('/v1/login_activities?success=false', acmeToken).expect(200);
      expect(failed.body.data).toEqual([]);
    });

    it('leave login activities of no organization to platform-wide tokens', async () => {
      const response = await get('/v1/login_activities?limit=100', platformToken).expect(200);
      expect(response.headers['x-total-count']).toBe(String(4 + 4 + orphanActivities.length));
      const orphans = response.body.data.filter(
        (activity: LoginActivityRow) => activity.user_id === null,
      );
      expect(orphans.map((activity: LoginActivityRow) => activity.id)).toEqual(
        orphanActivities.map((activity) => activity.id),
      );
    });
  });
});
