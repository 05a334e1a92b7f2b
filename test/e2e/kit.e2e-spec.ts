import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import {
  asExport,
  equalsFilter,
  exactFilter,
  filterQuery,
  pageIds,
  prefixFilter,
  rangeFilter,
  referenceIds,
  startTestApp,
  TestApp,
  testTarget,
} from '../kit';
import { PrivateMariaDb } from '../kit/private-mariadb';

describe('the test kit', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp()));
  afterAll(() => kit?.close());

  it("shows the reply's problem when a status expectation fails", async () => {
    const api = await kit.client();
    await expect(api.get('/v1/users?role_id=0').expect(200)).rejects.toThrow(
      /expected 200, got 400: .*role_id/,
    );
    await api.get('/v1/users?role_id=0').expect(400);
  });

  it("holds an export's error reply to the contract, and shows it when a status expectation fails", async () => {
    const api = await kit.client();
    const refused = await asExport(api.get('/v1/users?page=2')).expect(400);
    expect(JSON.parse(refused.body as string)).toMatchObject({ status: 400 });
    await expect(asExport(api.get('/v1/users?role_id=0')).expect(200)).rejects.toThrow(
      /expected 200, got 400: .*role_id/,
    );
  });

  it('makes distinct users from two kits on one database', async () => {
    const second = await startTestApp();
    try {
      const [one, other] = [await kit.data.user(), await second.data.user()];
      expect(one.email).not.toBe(other.email);
    } finally {
      await second.close();
    }
  });

  it("keeps each app's env to itself: another's PAGE_LIMIT_MAX changes nothing here", async () => {
    const api = await kit.client();
    await api.get('/v1/users?limit=50').expect(200);
    const other = await startTestApp({ env: { PAGE_LIMIT_MAX: '5', PAGE_LIMIT_DEFAULT: '5' } });
    try {
      const refused = await (await other.client()).get('/v1/users?limit=6').expect(400);
      expect(JSON.stringify(refused.body)).toContain('between 1 and 5');
      await api.get('/v1/users?limit=50').expect(200);
    } finally {
      await other.close();
    }
    await api.get('/v1/users?limit=50').expect(200);
    const tooMany = await api.get('/v1/users?limit=101').expect(400);
    expect(JSON.stringify(tooMany.body)).toContain('between 1 and 100');
  });

  it('refuses an env name it does not know, and leaves no database behind a failed boot', async () => {
    const databases = async (): Promise<string[]> => {
      if (testTarget === 'sqlite') {
        return readdirSync(tmpdir()).filter((name) =>
          name.startsWith(`listing-test-${process.pid}-`),
        );
      }
      const rows: Record<string, string>[] = await kit.dataSource.query('SHOW DATABASES');
      return rows
        .map((row) => Object.values(row)[0])
        .filter((name) => name.startsWith(`listing_test_${process.pid}_`));
    };
    const before = await databases();
    await expect(startTestApp({ env: { RATE_LIMT_PER_MINUTE: '3' } })).rejects.toThrow(
      /no variable RATE_LIMT_PER_MINUTE/,
    );
    await expect(startTestApp({ env: { RATE_LIMIT_PER_MINUTE: 'three' } })).rejects.toThrow(
      /RATE_LIMIT_PER_MINUTE/,
    );
    expect(await databases()).toEqual(before);
  });

  it('starts a private MariaDB on another port when its own was taken since the install', async () => {
    if (testTarget !== 'mysql') return;
    const server = new PrivateMariaDb();
    await server.install();
    const taken = server.port;
    // As a server of the suite running beside this one may take it.
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(taken, '127.0.0.1', () => resolve()));
    try {
      await server.start();
      expect(server.port).not.toBe(taken);
      expect(await server.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      other.close();
      await server.remove();
    }
  }, 120_000);

  it('names a field a factory does not take', async () => {
    await expect(kit.data.user({ organisation_id: 1 } as never)).rejects.toThrow(
      /data\.user\(\) has no field organisation_id/,
    );
  });

  it('refuses a value of another type than the field takes, which jest does not type-check', async () => {
    await expect(kit.data.loginActivity({ success: 'false' } as never)).rejects.toThrow(
      'data.loginActivity(): success must be true or false, not "false"',
    );
    await expect(kit.data.user({ role_id: '2' } as never)).rejects.toThrow(
      'data.user(): role_id must be a positive integer, not "2"',
    );
    await expect(kit.data.user({ created_at: '2026-01-01T00:00:00Z' } as never)).rejects.toThrow(
      'data.user(): created_at must be a valid Date from year 1 to 9999, not "2026-01-01T00:00:00Z"',
    );
    await expect(kit.data.loginActivity({ session_id: 7 } as never)).rejects.toThrow(
      'data.loginActivity(): session_id must be a string or null, not 7',
    );
    await expect(kit.data.user({ created_at: new Date('x') })).rejects.toThrow(
      'created_at must be a valid Date from year 1 to 9999, not an invalid Date',
    );
    await expect(
      kit.data.user({ created_at: new Date('+010000-01-01T00:00:00Z') }),
    ).rejects.toThrow('not the Date +010000-01-01T00:00:00.000Z');
    await expect(kit.data.user({ name: new Date(0) } as never)).rejects.toThrow(
      'name must be a string, not the Date 1970-01-01T00:00:00.000Z',
    );
    await expect(kit.data.user({ role_id: 2n } as never)).rejects.toThrow(
      'role_id must be a positive integer, not 2n',
    );
    // A user the factory did not make would write a row no organization's token sees.
    await expect(kit.data.loginActivity({ user: { id: 1 } } as never)).rejects.toThrow(
      'user must be a user data.user() made (id, email, organization_id), not {"id":1}',
    );
    // What each takes passes: null where the column takes it.
    const login = await kit.data.loginActivity({ success: false, session_id: null });
    expect(login).toMatchObject({ success: false, session_id: null });
  });

  it("writes every column each row of data.rows names, not only the first row's", async () => {
    const session = `rows-${Date.now()}`;
    await kit.data.rows('login_activities', 3, (i) => ({
      user_email: `rows-${i}@kit.test`,
      authentication_method: 'password',
      ip_address: '192.0.2.1',
      otp_required: false,
      success: i !== 1,
      created_at: new Date(Date.UTC(2026, 0, 1 + i)),
      session_id: session,
      ...(i === 1 ? { failure_reason: 'invalid_password', user_agent: 'curl/8' } : {}),
    }));
    const stored: Record<string, unknown>[] = await kit.dataSource.query(
      'SELECT user_email, failure_reason, user_agent FROM login_activities WHERE session_id = ? ORDER BY id',
      [session],
    );
    expect(stored).toEqual([
      { user_email: 'rows-0@kit.test', failure_reason: null, user_agent: null },
      { user_email: 'rows-1@kit.test', failure_reason: 'invalid_password', user_agent: 'curl/8' },
      { user_email: 'rows-2@kit.test', failure_reason: null, user_agent: null },
    ]);
  });

  it("gives a login activity made with user_id that user's e-mail and organization", async () => {
    const user = await kit.data.user();
    const activity = await kit.data.loginActivity({ user_id: user.id });
    expect(activity).toMatchObject({
      user_id: user.id,
      user_email: user.email,
      organization_id: user.organization_id,
    });
  });

  it('reads an instant with an offset, and finer than a millisecond, as the API does', async () => {
    const user = await kit.data.user();
    for (const at of ['2026-09-09T23:00:00Z', '2026-09-10T00:00:00Z', '2026-09-10T00:00:00.001Z']) {
      await kit.data.loginActivity({ user, created_at: new Date(at) });
    }
    const api = await kit.client();
    for (const from of ['2026-09-10T02:00:00+02:00', '2026-09-10T00:00:00.0001Z']) {
      const filters = [
        equalsFilter('user_id', user.id),
        rangeFilter('created_from', from, 'created_at', '>='),
      ];
      const path = `/v1/login_activities?${filterQuery(filters)}`;
      const expected = await referenceIds(kit.dataSource, 'login_activities', filters, 'id');
      expect(expected.length).toBeGreaterThan(0);
      expect(pageIds((await api.get(path).expect(200)).body)).toEqual(expected);
    }
  });
  it('gives rows made together their own ids', async () => {
    const organizations = await Promise.all([1, 2, 3].map(() => kit.data.organization()));
    const users = await Promise.all(
      organizations.map((organization) => kit.data.user({ organization_id: organization.id })),
    );
    expect(new Set(organizations.map(({ id }) => id)).size).toBe(3);
    expect(new Set(users.map(({ id }) => id)).size).toBe(3);
    for (const [i, organization] of organizations.entries()) {
      const api = await kit.client({ organizationId: organization.id });
      expect(pageIds((await api.get('/v1/users').expect(200)).body)).toEqual([users[i].id]);
    }
  });

  it("gives a row of a module's own table its key, whatever the key column's name", async () => {
    const key = testTarget === 'mysql' ? 'INT AUTO_INCREMENT PRIMARY KEY' : 'INTEGER PRIMARY KEY';
    await kit.dataSource.query(`CREATE TABLE kit_widgets (widget_id ${key}, name VARCHAR(20))`);
    const ids = [await kit.data.row('kit_widgets', { name: 'a' })];
    ids.push(await kit.data.row('kit_widgets', { name: 'b' }));
    const rows = await kit.dataSource.query('SELECT widget_id FROM kit_widgets ORDER BY widget_id');
    expect(ids).toEqual(rows.map(({ widget_id }: { widget_id: unknown }) => Number(widget_id)));
  });

  it('states q and a byte-for-byte filter as the API reads them', async () => {
    const organization = await kit.data.organization();
    const user = await kit.data.user({ organization_id: organization.id, name: 'a_c' });
    await kit.data.user({ organization_id: organization.id, name: 'abc' });
    const api = await kit.client({ organizationId: organization.id });
    for (const q of ['a_', 'a%']) {
      const filters = [prefixFilter(q)];
      const expected = await referenceIds(kit.dataSource, 'users', filters, 'id', organization.id);
      const served = pageIds((await api.get(`/v1/users?${filterQuery(filters)}`).expect(200)).body);
      expect({ q, ids: expected }).toEqual({ q, ids: served });
    }
    await kit.data.loginActivity({ user, session_id: 'sess_AbC' });
    await kit.data.loginActivity({ user, session_id: 'sess_abc' });
    const filters = [exactFilter('session_id', 'sess_AbC')];
    const expected = await referenceIds(kit.dataSource, 'login_activities', filters, 'id');
    expect(expected).toHaveLength(1);
    const path = `/v1/login_activities?${filterQuery(filters)}`;
    const platform = await kit.client();
    expect(pageIds((await platform.get(path).expect(200)).body)).toEqual(expected);
  });
});
