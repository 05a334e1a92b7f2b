import {
  snapshotTables,
  LoginActivityRow,
  parseLinks,
  startTestApp,
  TestApp,
  UserRow,
} from '../kit';

/**
 * Filters, sorts, keyset walks and the headers of the login activity listing, against a
 * reference implementation of CONTRACT §3 over the same rows.
 */
const T = Date.parse('2026-06-01T00:00:00.000Z');
const at = (ms: number) => new Date(T + ms);
const iso = (ms: number) => at(ms).toISOString();

// Walks make dozens of requests; jest's 5 s default is tight on a shared 2-core machine.
jest.setTimeout(30_000);

describe('GET /v1/login_activities: filters, sorting, keyset', () => {
  let kit: TestApp;
  let token: string;
  let rows: LoginActivityRow[];
  let ada: UserRow;
  let bob: UserRow;
  let scopedToken: string;

  beforeAll(async () => {
    kit = await startTestApp();
    token = await kit.token();
    ada = await kit.data.user({ email: 'ada@example.com' });
    bob = await kit.data.user({ email: 'bob@example.com' });
    scopedToken = await kit.token({ organizationId: ada.organization_id });
    const { data } = kit;
    rows = [
      await data.loginActivity({ user: ada, session_id: 'sess_a1', created_at: at(0) }),
      await data.loginActivity({
        user: ada,
        success: false,
        otp_required: true,
        ip_address: '192.0.2.1',
        created_at: at(1),
      }),
      await data.loginActivity({
        user: ada,
        authentication_method: 'oauth',
        oauth_provider: 'google',
        ip_address: '2001:db8::1',
        session_id: 'sess_a3',
        created_at: at(0),
      }),
      await data.loginActivity({
        user: bob,
        success: false,
        authentication_method: 'oauth',
        oauth_provider: 'github',
        failure_reason: 'oauth_denied',
        ip_address: '198.51.100.7',
        created_at: at(1000),
      }),
      await data.loginActivity({
        user_email: 'ghost@nowhere.test',
        success: false,
        ip_address: '203.0.113.9',
        created_at: at(-1),
      }),
      await data.loginActivity({
        user: bob,
        authentication_method: 'saml',
        otp_required: true,
        ip_address: '198.51.100.7',
        session_id: 'sess_b6',
        created_at: at(2000),
      }),
      // The writer stored the e-mail in another case than the user's.
      await data.loginActivity({
        user: ada,
        user_email: 'ADA@Example.COM',
        success: false,
        authentication_method: 'magic_link',
        failure_reason: 'otp_expired',
        otp_required: true,
        ip_address: '192.0.2.1',
        created_at: at(3000),
      }),
      await data.loginActivity({
        user: bob,
        success: false,
        authentication_method: 'passkey',
        failure_reason: 'account_disabled',
        created_at: at(-1000),
      }),
      ...(await data.many(20, (i) =>
        data.loginActivity({
          user: i % 4 === 0 ? bob : ada,
          success: i % 3 !== 0,
          otp_required: i % 5 === 0,
          created_at: at(3_600_000 + i * 60_000),
        }),
      )),
      // An IPv6 address with its zone, as a writer may store it.
      await data.loginActivity({ user: bob, ip_address: 'fe80::1%eth0', created_at: at(4000) }),
      // One a writer stored in capitals: found by any spelling, as README says.
      await data.loginActivity({ user: bob, ip_address: 'FE80::2%Eth1', created_at: at(4500) }),
      // A session id differing from another only in case: an opaque token, another session.
      await data.loginActivity({ user: bob, session_id: 'SESS_B6', created_at: at(5000) }),
      // Values a writer stored in other capitals: found by the documented spelling, on both
      // databases (MySQL/MariaDB compare in the column's collation, SQLite in NOCASE).
      await data.loginActivity({
        user: bob,
        authentication_method: 'OAuth',
        oauth_provider: 'GitHub',
        success: false,
        failure_reason: 'OTP_Expired',
        created_at: at(5500),
      }),
    ];
  });

  let before: Record<string, string>;
  beforeAll(async () => {
    before = await snapshotTables(kit.dataSource);
  });

  afterAll(() => kit.close());

  const get = (query: string, bearer = token) =>
    kit.http().get(`/v1/login_activities?${query}`).set('Authorization', `Bearer ${bearer}`);
  const idsOf = (response: { body: { data: { id: number }[] } }) =>
    response.body.data.map((row) => row.id);
  const ids = (list: LoginActivityRow[]) => list.map((row) => row.id);

  const reference: Record<string, (row: LoginActivityRow, value: string) => boolean> = {
    user_id: (r, v) => r.user_id === Number(v),
    user_email: (r, v) => r.user_email.toLowerCase() === v.toLowerCase(),
    success: (r, v) => r.success === (v === 'true'),
    authentication_method: (r, v) => r.authentication_method.toLowerCase() === v,
    oauth_provider: (r, v) => r.oauth_provider?.toLowerCase() === v,
    failure_reason: (r, v) => r.failure_reason?.toLowerCase() === v,
    // Hex digits and a zone in any case, on either side.
    ip_address: (r, v) => r.ip_address.toLowerCase() === v.toLowerCase(),
    session_id: (r, v) => r.session_id === v,
    otp_required: (r, v) => r.otp_required === (v === 'true'),
    created_from: (r, v) => r.created_at.getTime() >= Date.parse(v),
    created_to: (r, v) => r.created_at.getTime() < Date.parse(v),
  };
  const expected = (filters: Record<string, string>) =>
    ids(
      rows.filter((row) =>
        Object.entries(filters).every(([name, value]) => reference[name](row, value)),
      ),
    );
  /**
   * A time window goes with `sort=created_at` unless a filter of few rows (one user, e-mail,
   * address or session) narrows it first (README: filters and sorts); ids compared as sets.
   */
  const sortFor = (filters: Record<string, string>) =>
    (filters.created_from || filters.created_to) &&
    !['user_id', 'user_email', 'ip_address', 'session_id'].some((name) => filters[name])
      ? 'created_at'
      : 'id';
  const listed = async (filters: Record<string, string>) =>
    get(`${new URLSearchParams({ ...filters, sort: sortFor(filters) })}&limit=100`).expect(200);
  const list = async (filters: Record<string, string>) =>
    idsOf(await listed(filters)).sort((a, b) => a - b);

  describe('filters', () => {
    const cases: [string, () => Record<string, string>][] = [
      ['user_id', () => ({ user_id: String(bob.id) })],
      ['user_email, in any case on either side', () => ({ user_email: 'ada@EXAMPLE.com' })],
      ['user_email of no user', () => ({ user_email: 'Ghost@Nowhere.test' })],
      ['success=true', () => ({ success: 'true' })],
      ['success=false', () => ({ success: 'false' })],
      ['authentication_method', () => ({ authentication_method: 'oauth' })],
      ['oauth_provider', () => ({ oauth_provider: 'github' })],
      ['failure_reason', () => ({ failure_reason: 'otp_expired' })],
      ['ip_address (IPv4)', () => ({ ip_address: '198.51.100.7' })],
      ['ip_address (IPv6)', () => ({ ip_address: '2001:db8::1' })],
      ['ip_address (IPv6 with a zone)', () => ({ ip_address: 'fe80::1%eth0' })],
      ['ip_address (IPv6, in capitals)', () => ({ ip_address: '2001:DB8::1' })],
      ['ip_address (IPv6 stored in capitals)', () => ({ ip_address: 'fe80::2%eth1' })],
      ['ip_address (IPv6 stored in capitals, as stored)', () => ({ ip_address: 'FE80::2%Eth1' })],
      ['session_id, byte for byte', () => ({ session_id: 'sess_b6' })],
      ['session_id, in its other case', () => ({ session_id: 'SESS_B6' })],
      ['otp_required=true', () => ({ otp_required: 'true' })],
      ['otp_required=false', () => ({ otp_required: 'false' })],
      ['created_from', () => ({ created_from: iso(1000) })],
      ['created_to', () => ({ created_to: iso(1) })],
    ];
    it.each(cases)('%s keeps exactly the matching attempts', async (_name, filters) => {
      const query = filters();
      const want = expected(query);
      expect(want.length).toBeGreaterThan(0);
      expect(want.length).toBeLessThan(rows.length);
      const response = await listed(query);
      expect(idsOf(response).sort((a, b) => a - b)).toEqual(want);
      expect(response.headers['x-total-count']).toBe(String(want.length));
    });

    it('matches user_email case-insensitively in both directions', async () => {
      const stored = [rows[0], rows[1], rows[2], rows[6]].map((row) => row.id);
      for (const email of ['ada@example.com', 'ADA@EXAMPLE.COM', 'Ada@Example.Com']) {
        const found = await list({ user_email: email });
        expect(stored.every((id) => found.includes(id))).toBe(true);
      }
    });

    it('AND-s every filter given', async () => {
      const combinations: Record<string, string>[] = [
        { user_id: String(ada.id), success: 'false' },
        { user_id: String(ada.id), success: 'false', created_from: iso(0), created_to: iso(3001) },
        { success: 'false', otp_required: 'true', ip_address: '192.0.2.1' },
        { authentication_method: 'oauth', oauth_provider: 'google', user_id: String(ada.id) },
        { oauth_provider: 'google', success: 'false', user_email: 'BOB@example.com' },
        { user_email: 'BOB@example.com', failure_reason: 'account_disabled' },
        { session_id: 'sess_a3', user_id: String(ada.id), ip_address: '2001:db8::1' },
        { session_id: 'sess_a3', user_id: String(bob.id) },
        {
          user_id: String(ada.id),
          user_email: 'ada@example.com',
          success: 'false',
          authentication_method: 'magic_link',
          failure_reason: 'otp_expired',
          ip_address: '192.0.2.1',
          otp_required: 'true',
          created_from: iso(3000),
          created_to: iso(3001),
        },
      ];
      for (const query of combinations) {
        expect({ query, ids: await list(query) }).toEqual({ query, ids: expected(query) });
      }
      // "Failed logins for this user in the last 24 hours, newest first."
      const security = await get(
        `user_id=${ada.id}&success=false&created_from=${iso(-1)}&created_to=${iso(86_400_000)}&sort=-created_at`,
      ).expect(200);
      const failed = rows.filter(
        (row) => row.user_id === ada.id && !row.success && row.created_at.getTime() >= T - 1,
      );
      failed.sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || b.id - a.id);
      expect(idsOf(security)).toEqual(ids(failed));
    });

    it('takes created_from inclusive and created_to exclusive, to the millisecond', async () => {
      expect(await list({ created_from: iso(0), created_to: iso(1) })).toEqual([
        rows[0].id,
        rows[2].id,
      ]);
      expect(await list({ created_from: iso(0), created_to: iso(0) })).toEqual([]);
      expect(await list({ created_from: iso(1), created_to: iso(2) })).toEqual([rows[1].id]);
      expect(await list({ created_from: iso(-1), created_to: iso(0) })).toEqual([rows[4].id]);
      // The same instants written with offsets.
      expect(
        await list({
          created_from: '2026-06-01T02:00:00.000+02:00',
          created_to: '2026-05-31T19:00:00.001-05:00',
        }),
      ).toEqual([rows[0].id, rows[2].id]);
      // Finer than the rows' milliseconds (0.1 ms after one): from ≤ value < to still holds.
      const finer = (ms: number) => iso(ms).replace('Z', '1Z');
      expect(await list({ created_from: iso(0), created_to: finer(0) })).toEqual([
        rows[0].id,
        rows[2].id,
      ]);
      expect(await list({ created_from: finer(0), created_to: iso(2) })).toEqual([rows[1].id]);
      // As many digits as RFC 3339 allows: 10 here, a tenth of a nanosecond after one.
      const finest = (ms: number) => iso(ms).replace('Z', '0000001Z');
      expect(await list({ created_from: finest(0), created_to: iso(2) })).toEqual([rows[1].id]);
    });

    it.each([
      ['success=yes', 'success'],
      ['success=1', 'success'],
      ['success=TRUE', 'success'],
      ['success=', 'success'],
      ['otp_required=0', 'otp_required'],
      ['authentication_method=telepathy', 'authentication_method'],
      ['authentication_method=OAuth', 'authentication_method'],
      ['oauth_provider=myspace', 'oauth_provider'],
      ['failure_reason=oops', 'failure_reason'],
      ['ip_address=not-an-ip', 'ip_address'],
      ['ip_address=', 'ip_address'],
      ['ip_address=1.2.3.256', 'ip_address'],
      ['ip_address=1::2::3', 'ip_address'],
      ['ip_address=1.2.3.4%25eth0', 'ip_address'],
      ['session_id=', 'session_id'],
      ['user_id=x', 'user_id'],
      ['user_id=0', 'user_id'],
      ['user_email=', 'user_email'],
      ['user_email=ada@example.com%20', 'user_email'],
      ['user_email=ada@example.com%E2%80%8B', 'user_email'],
      ['user_email=ada%00@example.com', 'user_email'],
      ['created_from=yesterday', 'created_from'],
      ['created_to=2026-06-01T00:00:00', 'created_to'],
      ['created_to=2026-06-31', 'created_to'],
      ['sort=updated_at', 'sort'],
      ['sort=-name', 'sort'],
      ['sort=success', 'sort'],
    ])('?%s answers 400 naming %s', async (query, parameter) => {
      const response = await get(query).expect(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.body.errors).toEqual([{ parameter, message: expect.any(String) }]);
      expect(response.body.detail).toContain(parameter);
    });

    it("says to send an offset's + as %2B when it arrived as a space", async () => {
      const response = await get('created_from=2026-06-01T02:00:00+02:00').expect(400);
      expect(response.body.errors).toEqual([
        { parameter: 'created_from', message: expect.stringContaining('send the offset') },
      ]);
      expect(response.body.detail).toContain('%2B');
      const spaced = await get('created_from=2026-06-01 02:00').expect(400);
      expect(spaced.body.detail).not.toContain('%2B');
      const encoded = await get('created_from=2026-06-01T02:00:00%2B02:00').expect(200);
      expect(encoded.body.data).toBeDefined();
    });

    it('names every bad filter at once', async () => {
      const response = await get('success=maybe&otp_required=2&authentication_method=x').expect(
        400,
      );
      const names = response.body.errors.map((e: { parameter: string }) => e.parameter).sort();
      expect(names).toEqual(['authentication_method', 'otp_required', 'success']);
    });
  });

  describe('sort', () => {
    const byCreated = (direction: 1 | -1) => (a: LoginActivityRow, b: LoginActivityRow) =>
      direction * (a.created_at.getTime() - b.created_at.getTime() || a.id - b.id);

    it.each([
      ['id', (a: LoginActivityRow, b: LoginActivityRow) => a.id - b.id],
      ['-id', (a: LoginActivityRow, b: LoginActivityRow) => b.id - a.id],
      ['created_at', byCreated(1)],
      ['-created_at', byCreated(-1)],
    ])('sort=%s orders by the key, ties on id in the same direction', async (key, compare) => {
      const response = await get(`sort=${key}&limit=100`).expect(200);
      expect(idsOf(response)).toEqual(ids([...rows].sort(compare)));
    });

    it('breaks a created_at tie on id in the sort direction', async () => {
      const window = `created_from=${iso(0)}&created_to=${iso(1)}`;
      expect(idsOf(await get(`${window}&sort=created_at`))).toEqual([rows[0].id, rows[2].id]);
      expect(idsOf(await get(`${window}&sort=-created_at`))).toEqual([rows[2].id, rows[0].id]);
    });
  });

  describe('keyset walk', () => {
    const walk = async (query: string, bound?: 'after_id' | 'before_id') => {
      const pages: number[][] = [];
      for (let page = 1; ; page++) {
        const last = pages.at(-1)?.at(-1);
        const next = bound ? (last === undefined ? '' : `&${bound}=${last}`) : `&page=${page}`;
        const response = await get(`${query}&limit=6${next}`).expect(200);
        if (response.body.data.length === 0) return pages;
        pages.push(idsOf(response));
      }
    };

    it('after_id (sort=id) and before_id (sort=-id) give the offset walk’s pages', async () => {
      const up = await walk('sort=id');
      expect(up.flat()).toEqual(ids(rows));
      expect(await walk('sort=id', 'after_id')).toEqual(up);
      const down = await walk('sort=-id');
      expect(down.flat()).toEqual(ids(rows).reverse());
      expect(await walk('sort=-id', 'before_id')).toEqual(down);
    });

    it('walks a filtered set the same way', async () => {
      const query = `user_id=${ada.id}&success=true`;
      const offset = await walk(`${query}&sort=-id`);
      expect(offset.flat()).toEqual(
        expected({ user_id: String(ada.id), success: 'true' }).reverse(),
      );
      expect(await walk(`${query}&sort=-id`, 'before_id')).toEqual(offset);
    });

    it.each([
      ['after_id=2&sort=-id', 'after_id'],
      ['after_id=2&sort=-created_at', 'after_id'],
      ['before_id=2', 'before_id'],
      ['before_id=2&sort=created_at', 'before_id'],
    ])('?%s keeps the rows past %s in the order asked', async (query, bound) => {
      const value = Number(new URLSearchParams(query).get(bound));
      const sort = new URLSearchParams(query).get('sort') ?? 'id';
      const all = idsOf(await get(`sort=${sort}&limit=100`).expect(200));
      const response = await get(`${query}&limit=100`).expect(200);
      expect(idsOf(response)).toEqual(
        all.filter((id) => (bound === 'after_id' ? id > value : id < value)),
      );
    });
  });

  describe('organization scope', () => {
    it('filters, counts and links only within the token’s organization', async () => {
      const scoped = scopedToken;
      const mine = rows.filter((row) => row.organization_id === ada.organization_id);
      const all = await get('limit=5&sort=-created_at&success=true', scoped).expect(200);
      const want = mine.filter((row) => row.success);
      expect(all.headers['x-total-count']).toBe(String(want.length));
      expect(all.body.pagination.page_count).toBe(Math.ceil(want.length / 5));
      const last = new URL(parseLinks(all.headers.link).last, 'http://x');
      expect(last.searchParams.get('success')).toBe('true');
      expect(last.searchParams.get('page')).toBe(String(Math.ceil(want.length / 5)));

      const other = await get(`user_id=${bob.id}`, scoped).expect(200);
      expect(other.body.data).toEqual([]);
      expect(other.headers['x-total-count']).toBe('0');
      const ghost = await get('user_email=ghost@nowhere.test', scoped).expect(200);
      expect(ghost.body.data).toEqual([]);
    });
  });

  it('changed no row, whatever the requests above asked', async () => {
    expect(await snapshotTables(kit.dataSource)).toEqual(before);
  });
});
