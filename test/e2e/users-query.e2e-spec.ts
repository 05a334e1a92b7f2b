import { snapshotTables, parseLinks, startTestApp, TestApp, UserRow } from '../kit';

/**
 * Filters, sorts, keyset walks and the headers of the users listing, against a reference
 * implementation of CONTRACT §3 over the same rows.
 */
const T = Date.parse('2026-03-01T10:00:00.000Z');
const at = (ms: number) => new Date(T + ms);
const iso = (ms: number) => at(ms).toISOString();
const DAY = 86_400_000;

// Walks make dozens of requests; jest's 5 s default is tight on a shared 2-core machine.
jest.setTimeout(30_000);

describe('GET /v1/users: filters, sorting, keyset', () => {
  let kit: TestApp;
  let token: string;
  let users: UserRow[];
  let acme: number;
  let beta: number;
  let admin: number;
  let member: number;

  beforeAll(async () => {
    kit = await startTestApp();
    token = await kit.token();
    acme = (await kit.data.organization({ name: 'Acme' })).id;
    beta = (await kit.data.organization({ name: 'Beta' })).id;
    admin = (await kit.data.role({ name: 'admin' })).id;
    member = (await kit.data.role({ name: 'member' })).id;
    const make = (
      name: string,
      email: string,
      organization_id: number,
      role_id: number,
      created: number,
      updated: number,
    ) =>
      kit.data.user({
        name,
        email,
        organization_id,
        role_id,
        created_at: at(created),
        updated_at: at(updated),
      });
    users = [
      await make('Ada Lovelace', 'Ada.Lovelace@Example.test', acme, admin, 0, DAY),
      await make('Alan Turing', 'alan.turing@example.test', acme, member, 1, 2 * DAY),
      await make('Grace Hopper', 'grace@navy.test', beta, admin, 0, DAY),
      await make('Ada Byron', 'byron@example.test', beta, member, 1000, 3 * DAY),
      // Same name as #2 and same created_at as #1 and #3: ties for the sorts.
      await make('Alan Turing', 'turing2@example.test', acme, admin, 0, 2 * DAY),
      // LIKE's wildcards and our escape character must match literally.
      await make('Ed_sger Dijkstra', 'ed_sger@example.test', beta, member, -1, 4 * DAY),
      await make('Edxsger Codd', 'edxsger@example.test', beta, member, 2000, 4 * DAY),
      await make('Bang!x Bang', 'bang!x@example.test', acme, member, 3000, 5 * DAY),
      ...(await kit.data.many(30, (i) =>
        make(
          `Filler ${String(i).padStart(2, '0')}`,
          `filler${String(i).padStart(2, '0')}@fill.test`,
          beta,
          member,
          3_600_000 + i * 60_000,
          6 * DAY + (i % 3),
        ),
      )),
    ];
  });

  let before: Record<string, string>;
  beforeAll(async () => {
    before = await snapshotTables(kit.dataSource);
  });

  afterAll(() => kit.close());

  const get = (query: string) =>
    kit.http().get(`/v1/users?${query}`).set('Authorization', `Bearer ${token}`);
  const idsOf = (response: { body: { data: { id: number }[] } }) =>
    response.body.data.map((user) => user.id);
  const ids = (rows: UserRow[]) => rows.map((user) => user.id);

  /** What CONTRACT §3 says each filter keeps. */
  const reference: Record<string, (user: UserRow, value: string) => boolean> = {
    organization_id: (u, v) => u.organization_id === Number(v),
    role_id: (u, v) => u.role_id === Number(v),
    email: (u, v) => u.email.toLowerCase() === v.toLowerCase(),
    q: (u, v) =>
      u.name.toLowerCase().startsWith(v.toLowerCase()) ||
      u.email.toLowerCase().startsWith(v.toLowerCase()),
    created_from: (u, v) => u.created_at.getTime() >= Date.parse(v),
    created_to: (u, v) => u.created_at.getTime() < Date.parse(v),
    updated_from: (u, v) => u.updated_at.getTime() >= Date.parse(v),
    updated_to: (u, v) => u.updated_at.getTime() < Date.parse(v),
  };
  const expected = (filters: Record<string, string>) =>
    ids(
      users.filter((user) =>
        Object.entries(filters).every(([name, value]) => reference[name](user, value)),
      ),
    );

  /**
   * The filters' matches in the order an index keeps them in (README: filters and sorts): `q` by
   * name, a time range by its column, otherwise (or within an organization) by id.
   */
  const sortFor = (query: Record<string, string>): string =>
    query.organization_id || query.email
      ? 'id'
      : query.q
        ? 'name'
        : query.created_from || query.created_to
          ? 'created_at'
          : query.updated_from || query.updated_to
            ? 'updated_at'
            : 'id';
  const listedOnce = async (query: Record<string, string>) =>
    get(`${new URLSearchParams({ ...query, sort: sortFor(query) })}&limit=100`).expect(200);
  /** `q` is checked within one organization: asked of each and put together. */
  const listed = async (query: Record<string, string>) => {
    const asked =
      query.q && !query.organization_id && !query.email
        ? [acme, beta].map((id) => ({ ...query, organization_id: String(id) }))
        : [query];
    const found: number[] = [];
    for (const one of asked) found.push(...idsOf(await listedOnce(one)));
    return found.sort((a, b) => a - b);
  };

  describe('filters', () => {
    const cases: [string, () => Record<string, string>, number][] = [
      ['organization_id', () => ({ organization_id: String(acme) }), 4],
      ['role_id', () => ({ role_id: String(admin) }), 3],
      ['email, in another case', () => ({ email: 'ADA.LOVELACE@example.TEST' }), 1],
      ['q on names, case-insensitive', () => ({ q: 'ADA' }), 2],
      ['q on e-mails', () => ({ q: 'turing2' }), 1],
      ['q on names or e-mails', () => ({ q: 'al' }), 2],
      ['q with a literal _', () => ({ q: 'ed_' }), 1],
      ['q with a literal !', () => ({ q: 'bang!' }), 1],
      ['q with a literal %', () => ({ q: 'a%' }), 0],
      ['created_from', () => ({ created_from: iso(1000) }), 33],
      ['created_to', () => ({ created_to: iso(1) }), 4],
      ['updated_from', () => ({ updated_from: iso(4 * DAY) }), 33],
      ['updated_to', () => ({ updated_to: iso(2 * DAY) }), 2],
    ];
    it.each(cases)('%s keeps exactly the matching users', async (_name, filters, count) => {
      const query = filters();
      const found = await listed(query);
      expect(found).toEqual(expected(query));
      expect(found).toHaveLength(count);
      if (!query.q) {
        const response = await listedOnce(query);
        expect(response.headers['x-total-count']).toBe(String(count));
      }
    });

    it('AND-s every filter given', async () => {
      const combinations: Record<string, string>[] = [
        { organization_id: String(acme), role_id: String(admin) },
        { organization_id: String(beta), q: 'ed' },
        { organization_id: String(acme), q: 'al', created_from: iso(1) },
        { q: 'al', email: 'alan@example.test' },
        {
          organization_id: String(beta),
          role_id: String(member),
          updated_from: iso(2 * DAY),
          updated_to: iso(4 * DAY),
        },
        { organization_id: String(beta), created_from: iso(0), created_to: iso(3_600_000 + 1) },
        {
          organization_id: String(acme),
          role_id: String(admin),
          email: 'TURING2@example.test',
          q: 'Alan',
          created_from: iso(0),
          created_to: iso(1),
          updated_from: iso(DAY),
          updated_to: iso(3 * DAY),
        },
        { organization_id: String(acme), email: 'grace@navy.test' },
      ];
      for (const query of combinations) {
        expect({ query, ids: await listed(query) }).toEqual({ query, ids: expected(query) });
      }
      const all = await get(
        `organization_id=${acme}&role_id=${admin}&email=turing2@example.test&q=al&created_to=${iso(1)}`,
      ).expect(200);
      expect(idsOf(all)).toEqual([users[4].id]);
    });

    it('takes *_from inclusive and *_to exclusive, to the millisecond', async () => {
      const atT = [users[0].id, users[2].id, users[4].id];
      const window = (column: string, from: number, to: number) =>
        listed({ [`${column}_from`]: iso(from), [`${column}_to`]: iso(to) });
      expect(await window('created', 0, 1)).toEqual(atT);
      expect(await window('created', 0, 0)).toEqual([]);
      expect(await window('created', 1, 2)).toEqual([users[1].id]);
      expect(await window('created', -1, 0)).toEqual([users[5].id]);
      expect(await window('updated', DAY, DAY + 1)).toEqual([users[0].id, users[2].id]);
    });

    it('reads timestamps with an offset or only a date', async () => {
      // 12:00:00.001+02:00 is 10:00:00.001Z, the created_at of user #2.
      const plus = await listed({
        created_from: '2026-03-01T12:00:00.001+02:00',
        created_to: '2026-03-01T05:00:00.002-05:00',
      });
      expect(plus).toEqual([users[1].id]);
      const seconds = await listed({
        created_from: '2026-03-01T11:00:00+01:00',
        created_to: '2026-03-01T10:00:01Z',
      });
      expect(seconds).toEqual(expected({ created_from: iso(0), created_to: iso(1000) }));
      // RFC 3339 allows lower case for the separator and the zone.
      const lowerCase = await listed({
        created_from: '2026-03-01t11:00:00+01:00',
        created_to: '2026-03-01t10:00:01z',
      });
      expect(lowerCase).toEqual(seconds);
      const dates = await listed({ created_from: '2026-03-01', created_to: '2026-03-02' });
      expect(dates).toEqual(ids(users).sort((a, b) => a - b));
      expect(await listed({ created_to: '2026-03-01' })).toEqual([]);
    });

    it.each([
      ['q=a', 'q'],
      ['q=', 'q'],
      ['email=', 'email'],
      [`email=${'x'.repeat(321)}`, 'email'],
      ['organization_id=acme', 'organization_id'],
      ['organization_id=0', 'organization_id'],
      ['role_id=-1', 'role_id'],
      ['created_from=2026-03-01T10:00:00', 'created_from'],
      ['created_from=2026-03-01T10:00:00%2B2', 'created_from'],
      ['created_to=1764000000', 'created_to'],
      ['updated_from=2026-13-01', 'updated_from'],
      ['updated_to=2026-02-29T00:00:00Z', 'updated_to'],
      ['updated_to=2026-03-01T25:00:00Z', 'updated_to'],
      ['sort=role_id', 'sort'],
      ['sort=-password', 'sort'],
      ['sort=%2Bname', 'sort'],
      ['sort=name,id', 'sort'],
      ['sort=NAME', 'sort'],
    ])('?%s answers 400 naming %s', async (query, parameter) => {
      const response = await get(query).expect(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.body.errors).toEqual([{ parameter, message: expect.any(String) }]);
      expect(response.body.detail).toContain(parameter);
    });

    it.each([
      'created_to=9999-12-31T23:59:59.9999Z',
      'updated_from=9999-12-31T23:59:59-00:01',
      'created_from=0000-01-01T00:00:00%2B01:00',
      'updated_to=0000-12-31T23:59:59Z',
    ])('?%s, outside the instants a row can hold, answers 400 naming the range', async (query) => {
      const response = await get(query).expect(400);
      expect(response.body.errors).toEqual([
        {
          parameter: query.split('=')[0],
          message: 'must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z',
        },
      ]);
    });

    it('takes the first and the last instant a row can hold', async () => {
      const response = await get(
        'created_from=0001-01-01T00:00:00Z&created_to=9999-12-31T23:59:59.999Z&limit=100',
      ).expect(200);
      expect(idsOf(response)).toEqual(ids([...users].sort((a, b) => a.id - b.id)));
    });

    it('names the minimum length of q', async () => {
      const response = await get('q=a').expect(400);
      expect(response.body.errors[0].message).toContain('2');
    });
  });

  describe('sort', () => {
    const column = (key: string) => key.replace(/^-/, '') as keyof UserRow;
    const compare = (key: string) => (a: UserRow, b: UserRow) => {
      const field = column(key);
      const value = (user: UserRow) => {
        const v = user[field];
        return v instanceof Date ? v.getTime() : typeof v === 'string' ? v.toLowerCase() : v;
      };
      const [x, y] = [value(a), value(b)];
      const order = x < y ? -1 : x > y ? 1 : a.id - b.id;
      return key.startsWith('-') ? -order : order;
    };
    const keys = ['id', 'created_at', 'updated_at', 'name', 'email'].flatMap((k) => [k, `-${k}`]);

    it.each(keys)('sort=%s orders by the key, ties on id in the same direction', async (key) => {
      const response = await get(`sort=${key}&limit=100`).expect(200);
      expect(idsOf(response)).toEqual(ids([...users].sort(compare(key))));
    });

    it('breaks ties on id: equal created_at and equal names', async () => {
      const [ada, alan, grace, , alan2] = users;
      const created = await get(`sort=created_at&created_to=${iso(1)}&created_from=${iso(0)}`);
      expect(idsOf(created)).toEqual([ada.id, grace.id, alan2.id]);
      const createdDesc = await get(`sort=-created_at&created_to=${iso(1)}&created_from=${iso(0)}`);
      expect(idsOf(createdDesc)).toEqual([alan2.id, grace.id, ada.id]);
      const names = await get(`sort=name&q=alan&organization_id=${acme}`).expect(200);
      expect(idsOf(names)).toEqual([alan.id, alan2.id]);
      const namesDesc = await get(`sort=-name&q=alan&organization_id=${acme}`).expect(200);
      expect(idsOf(namesDesc)).toEqual([alan2.id, alan.id]);
    });

    it('pages a sorted listing without gaps or repeats', async () => {
      const seen: number[] = [];
      for (let page = 1; page <= 6; page++) {
        seen.push(...idsOf(await get(`sort=-updated_at&limit=7&page=${page}`).expect(200)));
      }
      expect(seen).toEqual(ids([...users].sort(compare('-updated_at'))));
    });
  });

  describe('keyset walk', () => {
    const walkOffset = async (query: string, limit: number) => {
      const pages: number[][] = [];
      for (let page = 1; ; page++) {
        const response = await get(`${query}&limit=${limit}&page=${page}`).expect(200);
        if (response.body.data.length === 0) return pages;
        pages.push(idsOf(response));
      }
    };
    const walkKeyset = async (query: string, limit: number, bound: 'after_id' | 'before_id') => {
      const pages: number[][] = [];
      let next = '';
      for (;;) {
        const response = await get(`${query}&limit=${limit}${next}`).expect(200);
        const page = idsOf(response);
        if (page.length === 0) return pages;
        pages.push(page);
        next = `&${bound}=${page[page.length - 1]}`;
      }
    };

    it('after_id with sort=id yields the same pages as the offset walk', async () => {
      const offset = await walkOffset('sort=id', 7);
      expect(offset.flat()).toEqual(ids(users));
      expect(await walkKeyset('sort=id', 7, 'after_id')).toEqual(offset);
      expect(await walkKeyset('page=1', 7, 'after_id')).toEqual(offset);
    });

    it('before_id with sort=-id yields the same pages as the offset walk', async () => {
      const offset = await walkOffset('sort=-id', 5);
      expect(offset.flat()).toEqual(ids(users).reverse());
      expect(await walkKeyset('sort=-id', 5, 'before_id')).toEqual(offset);
    });

    it('walks a filtered set, and counts what is left of it', async () => {
      const query = `organization_id=${beta}&role_id=${member}`;
      const offset = await walkOffset(`${query}&sort=id`, 4);
      expect(offset.flat()).toEqual(
        expected({ organization_id: String(beta), role_id: String(member) }),
      );
      expect(await walkKeyset(query, 4, 'after_id')).toEqual(offset);
      const rest = await get(`${query}&after_id=${offset[0][3]}&limit=4`).expect(200);
      const left = offset.flat().length - 4;
      expect(rest.headers['x-total-count']).toBe(String(left));
      expect(rest.body.pagination).toEqual({
        current_page: 1,
        limit: 4,
        page_count: Math.ceil(left / 4),
      });
    });

    it.each([
      ['after_id=3&sort=-id', 'after_id'],
      ['after_id=3&sort=created_at', 'after_id'],
      ['after_id=3&sort=-name', 'after_id'],
      ['before_id=3', 'before_id'],
      ['before_id=3&sort=id', 'before_id'],
      ['before_id=3&sort=-created_at', 'before_id'],
    ])('?%s keeps the rows past %s in the order asked', async (query, bound) => {
      const value = Number(new URLSearchParams(query).get(bound));
      const sort = new URLSearchParams(query).get('sort') ?? 'id';
      const all = idsOf(await get(`sort=${sort}&limit=100`).expect(200));
      const response = await get(`${query}&limit=100`).expect(200);
      expect(idsOf(response)).toEqual(
        all.filter((id) => (bound === 'after_id' ? id > value : id < value)),
      );
    });

    it('keeps the ids between after_id and before_id together, in either order', async () => {
      expect(idsOf(await get('after_id=3&before_id=9').expect(200))).toEqual([4, 5, 6, 7, 8]);
      expect(idsOf(await get('after_id=3&before_id=9&sort=-id').expect(200))).toEqual([
        8, 7, 6, 5, 4,
      ]);
    });
  });

  describe('page_count, X-Total-Count and Link of a filtered set', () => {
    it('describe the filtered set and keep every other parameter, encoded', async () => {
      const from = '2026-03-01T11:00:00.000+01:00';
      const query = `organization_id=${beta}&sort=-created_at&created_from=${encodeURIComponent(from)}&q=fi&limit=4&page=2`;
      const response = await get(query).expect(200);
      const matching = expected({ organization_id: String(beta), created_from: from, q: 'fi' });
      expect(matching).toHaveLength(30);
      expect(response.headers['x-total-count']).toBe('30');
      expect(response.body.pagination).toEqual({ current_page: 2, limit: 4, page_count: 8 });

      const links = parseLinks(response.headers.link);
      expect(Object.keys(links).sort()).toEqual(['first', 'last', 'next', 'prev']);
      for (const [rel, page] of Object.entries({ first: 1, prev: 1, next: 3, last: 8 })) {
        const url = new URL(links[rel], 'http://x');
        expect(url.pathname).toBe('/v1/users');
        // `next` is a keyset step: an opaque cursor in place of the page number.
        const position =
          rel === 'next'
            ? { cursor: url.searchParams.get('cursor') ?? 'missing' }
            : { page: String(page) };
        expect(Object.fromEntries(url.searchParams)).toEqual({
          organization_id: String(beta),
          sort: '-created_at',
          created_from: from,
          q: 'fi',
          limit: '4',
          ...position,
        });
        // The link is a valid URL as is: no raw `+`, space, `<`, `>` or `,`.
        expect(links[rel]).not.toMatch(/[+ <>,]/);
      }

      // Following the links walks the same filtered, sorted set.
      const last = await kit.http().get(links.last).set('Authorization', `Bearer ${token}`);
      expect(last.status).toBe(200);
      expect(last.body.pagination).toEqual({ current_page: 8, limit: 4, page_count: 8 });
      expect(last.body.data).toHaveLength(2);
      expect(parseLinks(last.headers.link).next).toBeUndefined();
    });

    it('keep a keyset bound in the links', async () => {
      const response = await get(`after_id=${users[10].id}&limit=5`).expect(200);
      const next = new URL(parseLinks(response.headers.link).next, 'http://x');
      expect(next.searchParams.get('after_id')).toBe(String(users[10].id));
      expect(response.headers['x-total-count']).toBe(String(users.length - 11));
    });

    it('give page_count 0, X-Total-Count 0 and only a tail-polling next when the filters match nothing', async () => {
      const response = await get(`q=zz&organization_id=${acme}`).expect(200);
      expect(response.body.pagination.page_count).toBe(0);
      expect(response.headers['x-total-count']).toBe('0');
      expect(Object.keys(parseLinks(response.headers.link))).toEqual(['next']);
      const descending = await get(`q=zz&organization_id=${acme}&sort=-id`).expect(200);
      expect(descending.headers.link).toBeUndefined();
    });
  });

  it('changed no row, whatever the requests above asked', async () => {
    expect(await snapshotTables(kit.dataSource)).toEqual(before);
  });
});
