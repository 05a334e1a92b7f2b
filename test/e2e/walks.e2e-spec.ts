import {
  asExport,
  exportedIds,
  pageIds,
  parseLinks,
  startTestApp,
  TestApp,
  UserRow,
  walkIds,
} from '../kit';

import type { Principal } from '../../src/common/auth/principal';
import { ListingCursors } from '../../src/common/listing/listing-cursor';
import { buildCriteria, criteriaKey, walkBinding } from '../../src/common/listing/listing-criteria';
import type { ListingQuery } from '../../src/common/listing/listing-query.dto';
import { loginActivitiesListing } from '../../src/login-activities/login-activities.listing';
import { usersListing } from '../../src/users/users.listing';

type Item = { id: number } & Record<string, unknown>;
type PageBody = { data: Item[]; pagination: { current_page: number; page_count: number } };

/**
 * Walks by `Link: rel="next"`: every row once, in order, by cursor; tail polling; mutable sort
 * keys; cursor validation. Each listing's walk is compared with its offset walk.
 */
describe('walks by Link: rel="next"', () => {
  let kit: TestApp;
  let token: string;
  let scopedToken: string;
  let users: UserRow[];
  let organizationId: number;

  beforeAll(async () => {
    kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: '0' } });
    token = await kit.token();
    const [first, second] = [await kit.data.organization(), await kit.data.organization()];
    organizationId = first.id;
    scopedToken = await kit.token({ organizationId });
    users = await kit.data.many(37, (i) =>
      kit.data.user({
        name: `Walker ${String.fromCharCode(97 + (i % 7))}`,
        organization_id: i % 3 === 0 ? second.id : first.id,
      }),
    );
    await kit.data.many(41, (i) =>
      kit.data.loginActivity({
        user: users[i % users.length],
        success: i % 4 !== 0,
        authentication_method: i % 5 === 0 ? 'oauth' : 'password',
      }),
    );
  });

  afterAll(() => kit.close());

  const get = (path: string, bearer = token) =>
    kit.http().get(path).set('Authorization', `Bearer ${bearer}`);

  /** Follows `next` from `path` as given, collecting every page. */
  async function walkByNext(path: string, bearer = token) {
    const pages: { items: Item[]; current: number; pageCount: number; next?: string }[] = [];
    let url: string | undefined = path;
    while (url && pages.length < 100) {
      const response: { body: PageBody; headers: Record<string, string> } = await get(
        url,
        bearer,
      ).expect(200);
      const next: string | undefined = parseLinks(response.headers.link).next;
      pages.push({
        items: response.body.data,
        current: response.body.pagination.current_page,
        pageCount: response.body.pagination.page_count,
        next,
      });
      // An ascending id walk goes on past its end (tail polling): stop at its first empty page.
      url = response.body.data.length === 0 ? undefined : next;
    }
    return pages;
  }

  async function walkByPage(path: string, bearer = token) {
    const items: Item[] = [];
    for (let page = 1; ; page++) {
      const response = await get(`${path}&page=${page}`, bearer).expect(200);
      items.push(...response.body.data);
      if (page >= response.body.pagination.page_count) return items;
    }
  }

  const walks = [
    ...['id', '-id', 'created_at', '-created_at', 'updated_at', '-updated_at', 'name', '-name']
      .concat(['email', '-email'])
      .map((sort) => `/v1/users?limit=4&sort=${sort}`),
    `/v1/users?limit=5&sort=-name&organization_id=0`,
    ...['id', '-id', 'created_at', '-created_at'].map(
      (sort) => `/v1/login_activities?limit=6&sort=${sort}`,
    ),
    '/v1/login_activities?limit=3&success=false&sort=-created_at',
    '/v1/login_activities?limit=4&authentication_method=password&sort=created_at',
    '/v1/login_activities?limit=7&after_id=5',
    '/v1/login_activities?limit=7&before_id=30&sort=-id',
  ];

  it.each(walks)('visits every row of %s once, in order, as the offset walk does', async (path) => {
    const realPath = path.replace('organization_id=0', `organization_id=${organizationId}`);
    const byPage = await walkByPage(realPath);
    const pages = await walkByNext(realPath);
    const byNext = pages.flatMap((page) => page.items);
    expect(byNext.map((item) => item.id)).toEqual(byPage.map((item) => item.id));
    expect(byNext).toEqual(byPage);
    expect(byPage.length).toBeGreaterThan(8);
    // Every step after the first is a cursor, and reports its true place in the walk.
    expect(pages.slice(0, -1).every((page) => page.next?.includes('cursor='))).toBe(true);
    pages
      .filter((page) => page.items.length > 0)
      .forEach((page, index) => {
        expect(page.current).toBe(index + 1);
        expect(page.pageCount).toBe(
          Math.ceil(byPage.length / Number(/limit=(\d+)/.exec(path)![1])),
        );
      });
  });

  it('walks only what an organization-scoped token may see, whatever it asks', async () => {
    for (const path of ['/v1/users?limit=4&sort=name', '/v1/login_activities?limit=5']) {
      const byPage = await walkByPage(path, scopedToken);
      const byNext = (await walkByNext(path, scopedToken)).flatMap((page) => page.items);
      expect(byNext).toEqual(byPage);
      expect(byNext.length).toBeGreaterThan(5);
    }
    const scopedUsers = (await walkByNext('/v1/users?limit=10', scopedToken)).flatMap(
      (page) => page.items,
    );
    expect(new Set(scopedUsers.map((user) => user.organization_id))).toEqual(
      new Set([organizationId]),
    );
  });

  it('starts a keyset walk at after_id=0, and its next is a cursor', async () => {
    const response = await get('/v1/login_activities?after_id=0&limit=10').expect(200);
    const all = await get('/v1/login_activities?limit=10').expect(200);
    expect(response.body).toEqual(all.body);
    expect(parseLinks(response.headers.link).next).toMatch(
      /after_id=0.*cursor=|cursor=.*after_id=0/,
    );
  });

  it('gives the last page of an ascending id walk, even an empty one, a next link that returns rows appended later', async () => {
    const pages = await walkByNext('/v1/login_activities?limit=20');
    const tail = pages.at(-1)!;
    expect(tail.items).toEqual([]);
    expect(tail.next).toContain('cursor=');
    // The last full page links next as well.
    expect(pages.at(-2)!.next).toContain('cursor=');

    const appended = await kit.data.loginActivity({ user: users[0] });
    const later = await get(tail.next!).expect(200);
    expect(later.body.data.map((item: Item) => item.id)).toEqual([appended.id]);
    const again = parseLinks(later.headers.link).next;
    expect(again).toContain('cursor=');
    const nothingNew = await get(again).expect(200);
    expect(nothingNew.body.data).toEqual([]);
    expect(parseLinks(nothingNew.headers.link).next).toContain('cursor=');
  });

  it('ends a walk with a tail whose window has closed: no row can enter it any more', async () => {
    for (const path of [
      '/v1/login_activities?limit=20&created_to=2026-06-02T00:00:00Z',
      '/v1/users?limit=20&sort=updated_at&updated_to=2026-06-02T00:00:00Z',
    ]) {
      const pages = await walkByNext(path);
      expect(pages.at(-1)!.items.length).toBeGreaterThan(0);
      expect(pages.at(-1)!.next).toBeUndefined();
    }
    // Still open, it goes on.
    const open = await walkByNext('/v1/users?limit=20&sort=updated_at&updated_to=2099-01-01');
    expect(open.at(-1)!.items).toEqual([]);
    expect(open.at(-1)!.next).toContain('cursor=');
  });

  it('gives a descending walk no next on its last page', async () => {
    const pages = await walkByNext('/v1/login_activities?limit=20&sort=-id');
    expect(pages.at(-1)!.items.length).toBeGreaterThan(0);
    expect(pages.at(-1)!.next).toBeUndefined();
  });

  it('refuses a tampered cursor, a cursor of another walk or token, and a cursor with page', async () => {
    const first = await get('/v1/users?limit=5&sort=name').expect(200);
    const next = parseLinks(first.headers.link).next;
    const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
    const [payload, signature] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify(['Walker a', 1, 0])).toString('base64url');
    // The last character's lowest bit: one base64 ignores where the length leaves spare bits.
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const lastBitFlipped = (text: string) =>
      text.slice(0, -1) + ALPHABET[ALPHABET.indexOf(text.at(-1)!) ^ 1];
    const refused = [
      `/v1/users?limit=5&sort=name&cursor=${payload}.${lastBitFlipped(signature)}`,
      `/v1/users?limit=5&sort=name&cursor=${lastBitFlipped(payload)}.${signature}`,
      `/v1/users?limit=5&sort=name&cursor=${payload}.${signature.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`,
      `/v1/users?limit=5&sort=name&cursor=${forged}.${signature}`,
      `/v1/users?limit=5&sort=name&cursor=not-a-cursor`,
      // Another sort, another filter: the cursor belongs to its own walk.
      `/v1/users?limit=5&sort=-name&cursor=${cursor}`,
      `/v1/users?limit=5&sort=name&organization_id=${users[0].organization_id}&cursor=${cursor}`,
    ];
    for (const path of refused) {
      const response = await get(path).expect(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.body.errors.map((error: { parameter: string }) => error.parameter)).toEqual([
        'cursor',
      ]);
    }
    // Another token's scope.
    const foreign = await get(next, scopedToken).expect(400);
    expect(foreign.body.errors[0].parameter).toBe('cursor');
    const withPage = await get(`${next}&page=2`).expect(400);
    expect(withPage.body.errors[0].parameter).toBe('page');
    // Both named where neither is well-formed on its own terms.
    const bothWrong = await get('/v1/users?limit=5&sort=name&cursor=abc&page=1').expect(400);
    expect(bothWrong.body.errors.map((e: { parameter: string }) => e.parameter).sort()).toEqual([
      'cursor',
      'page',
    ]);
    // Followed as given, it works.
    await get(next).expect(200);
  });

  it.each([
    ['users', '/v1/users', { sort: 'name', q: 'walker' }],
    // Before `exact`, a session id was compared in the column's collation, its SQL without CAST.
    ['login_activities', '/v1/login_activities', { sort: 'id', session_id: 'sess_walk' }],
  ] as const)(
    'continues a %s walk from a cursor an earlier release sealed with its conditions’ SQL',
    async (resource, collection, filters) => {
      if (resource === 'login_activities') {
        for (let i = 0; i < 5; i++) await kit.data.loginActivity({ session_id: 'sess_walk' });
      }
      const first = await get(`${collection}?limit=2&${new URLSearchParams(filters)}`).expect(200);
      const next = parseLinks(first.headers.link).next;
      const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
      // The same position, sealed as releases before walkBinding did.
      const query = { ...filters, limit: 2 } as unknown as ListingQuery;
      const platform: Principal = {
        tokenId: 0,
        tokenName: '',
        scopes: new Set(),
        organizationId: null,
      };
      const definition = resource === 'users' ? usersListing : loginActivitiesListing;
      const collated = Object.fromEntries(
        Object.entries(definition.filters).map(([name, filter]) => [
          name,
          { ...filter, exact: undefined },
        ]),
      );
      const cursors = kit.app.get(ListingCursors);
      const position = cursors.decode(walkBinding(definition, query, platform), cursor);
      const criteria = buildCriteria({ ...definition, filters: collated }, query, platform);
      const earlier = cursors.encode(
        `${criteriaKey(resource, criteria)}|${filters.sort}|*`,
        position,
      );
      const continued = await get(next.replace(cursor, encodeURIComponent(earlier))).expect(200);
      expect(pageIds(continued.body)).toEqual(pageIds((await get(next).expect(200)).body));
    },
  );

  it('continues a walk with another limit, numbering its page by its first row', async () => {
    const all = await walkByNext('/v1/users?limit=100&sort=name');
    const ids = all.flatMap((page) => page.items.map((item) => item.id));
    const first = await get('/v1/users?limit=2&sort=name').expect(200);
    const next = parseLinks(first.headers.link).next.replace('limit=2', 'limit=3');
    const response = await get(next).expect(200);
    expect(pageIds(response.body)).toEqual(ids.slice(2, 5));
    expect(response.body.pagination).toMatchObject({ current_page: 1, limit: 3 });
    const onward = parseLinks(response.headers.link).next;
    expect(pageIds((await get(onward).expect(200)).body)).toEqual(ids.slice(5, 8));
  });

  it('walks users by a mutable key without skipping or repeating another row; the changed row comes again later', async () => {
    const path = '/v1/users?limit=5&sort=updated_at';
    const expected = (await walkByPage(path)).map((user) => user.id);
    const first = await get(path).expect(200);
    const seen: number[] = first.body.data.map((user: Item) => user.id);
    // A row already delivered is changed: it moves to the end of the walk.
    const moved = seen[0];
    await kit.dataSource.query(
      `UPDATE users SET updated_at = '2030-01-01 00:00:00.000' WHERE id = ${moved}`,
    );
    let url: string | undefined = parseLinks(first.headers.link).next;
    while (url) {
      const response: { body: PageBody; headers: Record<string, string> } =
        await get(url).expect(200);
      seen.push(...response.body.data.map((user: Item) => user.id));
      // A walk in the order of changes goes on past its end, as an id walk does.
      url = response.body.data.length === 0 ? undefined : parseLinks(response.headers.link).next;
    }
    const others = seen.filter((id) => id !== moved);
    expect(others).toEqual(expected.filter((id) => id !== moved));
    expect(seen.filter((id) => id === moved)).toHaveLength(2);
    expect(seen.at(-1)).toBe(moved);
  });
});

describe('tail polling holds back the newest rows (TAIL_HOLDBACK_MS)', () => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: '60000' } });
    token = await kit.token();
  });

  afterAll(() => kit.close());

  it('holds back a change feed (sort=updated_at) too: its last page goes on, and a change committed late is not skipped', async () => {
    const { id: organization_id } = await kit.data.organization();
    const old = await kit.data.user({ organization_id, updated_at: new Date('2026-03-01') });
    const fresh = await kit.data.user({ organization_id, updated_at: new Date() });
    const api = kit.as(token);
    const path = `/v1/users?organization_id=${organization_id}&sort=updated_at`;
    const first = await api.get(path).expect(200);
    expect(pageIds(first.body)).toEqual([old.id]);
    const exported = await asExport(api.get(path)).expect(200);
    expect(exportedIds(exported.body)).toEqual([old.id]);
    const next = parseLinks(first.headers.link).next;
    expect(next).toContain('cursor=');
    // A change committed late: dated before `fresh`'s, after the page's last row. Both then age
    // past the holdback (moved back here), and the feed's next page has them in order.
    const late = await kit.data.user({ organization_id, updated_at: new Date(Date.now() - 1000) });
    await kit.dataSource.query(
      `UPDATE users SET updated_at = '2026-03-02 00:00:01.000' WHERE id = ${late.id}`,
    );
    await kit.dataSource.query(
      `UPDATE users SET updated_at = '2026-03-02 00:00:02.000' WHERE id = ${fresh.id}`,
    );
    const later = await api.get(next).expect(200);
    expect(pageIds(later.body)).toEqual([late.id, fresh.id]);
    const again = await api.get(parseLinks(later.headers.link).next).expect(200);
    expect(pageIds(again.body)).toEqual([]);
  });

  it('holds a change dated ahead in a change feed until its time, so later changes still come', async () => {
    const { id: organization_id } = await kit.data.organization();
    const old = await kit.data.user({ organization_id, updated_at: new Date('2026-03-01') });
    const ahead = await kit.data.user({ organization_id, updated_at: new Date('2099-01-01') });
    const api = kit.as(token);
    const first = await api.get(`/v1/users?organization_id=${organization_id}&sort=updated_at`);
    expect(pageIds(first.body)).toEqual([old.id]);
    // A change made after the page: served next, not left behind a cursor parked in 2099.
    const changed = await kit.data.user({ organization_id, updated_at: new Date('2026-03-02') });
    const later = await api.get(parseLinks(first.headers.link).next).expect(200);
    expect(pageIds(later.body)).toEqual([changed.id]);
    expect(ahead.id).toBeGreaterThan(old.id);
  });

  it('gives an empty change feed a next that returns the changes made later', async () => {
    const { id: organization_id } = await kit.data.organization();
    const api = kit.as(token);
    const empty = await api
      .get(`/v1/users?organization_id=${organization_id}&sort=updated_at&limit=5`)
      .expect(200);
    expect(empty.body.data).toEqual([]);
    const next = parseLinks(empty.headers.link).next;
    expect(next).toContain('cursor=');
    const changed = await kit.data.user({ organization_id });
    const later = await api.get(next).expect(200);
    expect(pageIds(later.body)).toEqual([changed.id]);
  });
});

/** An id walk serves only ids seen TAIL_HOLDBACK_MS ago, and of those, rows older than that. */
describe('tail polling in id order, once the ids have settled', () => {
  const HOLDBACK_MS = 1500;
  let kit: TestApp;
  let token: string;
  /** Until every id written so far has been seen a hold-back ago (read every HOLDBACK_MS / 4). */
  const settled = () => new Promise((resolve) => setTimeout(resolve, HOLDBACK_MS * 1.5 + 200));

  beforeAll(async () => {
    kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: String(HOLDBACK_MS) } });
    token = await kit.token();
  });

  afterAll(() => kit.close());

  it('serves rows younger than the holdback, and any after them in id order, only once they are older', async () => {
    const user = await kit.data.user();
    const old = await kit.data.loginActivity({ user });
    // A row younger than the holdback still once its id has settled (dated a little ahead), then
    // an older one with a higher id (as a late commit would look).
    const fresh = await kit.data.loginActivity({
      user,
      created_at: new Date(Date.now() + HOLDBACK_MS * 3),
    });
    const after = await kit.data.loginActivity({ user });
    await settled();
    const response = await kit
      .http()
      .get('/v1/login_activities?limit=10')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(response.body.data.map((item: Item) => item.id)).toEqual([old.id]);
    const next = parseLinks(response.headers.link).next;
    expect(next).toContain('cursor=');
    // Once it is older than the holdback (moved back here), the poller gets it and the row after it.
    await kit.dataSource.query(
      `UPDATE login_activities SET created_at = '2026-06-01 00:00:01.000' WHERE id = ${fresh.id}`,
    );
    const later = await kit.http().get(next).set('Authorization', `Bearer ${token}`).expect(200);
    expect(later.body.data.map((item: Item) => item.id)).toEqual([fresh.id, after.id]);
    // Walks in other orders are not held back.
    const newestFirst = await kit
      .http()
      .get('/v1/login_activities?sort=-id')
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(newestFirst.body.data).toHaveLength(3);
  });

  it('holds back a row dated a little ahead (a clock off), not one dated far ahead, in pages and exports', async () => {
    const { id: organization_id } = await kit.data.organization();
    const future = await kit.data.user({ organization_id, created_at: new Date('2099-01-01') });
    const after = await kit.data.user({ organization_id });
    const { id: other } = await kit.data.organization();
    // Two minutes ahead (past the holdback itself, within what a clock or a replica's lag is off).
    await kit.data.user({ organization_id: other, created_at: new Date(Date.now() + 120_000) });
    const api = kit.as(token);
    await settled();
    const held = await api.get(`/v1/users?organization_id=${other}`).expect(200);
    expect(held.body.data).toEqual([]);
    expect(held.headers['x-total-count']).toBe('1');
    const path = `/v1/users?organization_id=${organization_id}`;
    const page = await api.get(path).expect(200);
    expect(pageIds(page.body)).toEqual([future.id, after.id]);
    const exported = await asExport(api.get(path)).expect(200);
    expect(exportedIds(exported.body)).toEqual([future.id, after.id]);
    expect(await walkIds(api, `${path}&limit=1`)).toEqual([future.id, after.id]);
  });

  it('gives a walk whose window has closed a next link while a row in it is held back', async () => {
    const user = await kit.data.user();
    const dayAgo = new Date(Date.now() - 86_400_000);
    const first = await kit.data.loginActivity({ user, created_at: dayAgo });
    await settled();
    // Back-dated into the window, its id not yet seen a hold-back ago.
    const late = await kit.data.loginActivity({ user, created_at: dayAgo });
    const closedTo = new Date(Date.now() - 3_600_000).toISOString();
    const api = kit.as(token);
    const page = await api
      .get(`/v1/login_activities?user_id=${user.id}&created_to=${closedTo}`)
      .expect(200);
    expect(pageIds(page.body)).toEqual([first.id]);
    const next = parseLinks(page.headers.link).next;
    expect(next).toContain('cursor=');
    await settled();
    expect(pageIds((await api.get(next!).expect(200)).body)).toEqual([late.id]);
  });

  it('gives a numbered page whose every row is held back a next link that serves them later', async () => {
    const user = await kit.data.user();
    const dayAgo = new Date(Date.now() - 86_400_000);
    const settledRows = await kit.data.many(2, () =>
      kit.data.loginActivity({ user, created_at: dayAgo }),
    );
    await settled();
    const late = await kit.data.loginActivity({ user, created_at: dayAgo });
    const closedTo = new Date(Date.now() - 3_600_000).toISOString();
    const api = kit.as(token);
    const path = `/v1/login_activities?user_id=${user.id}&created_to=${closedTo}&limit=1`;
    expect(pageIds((await api.get(`${path}&page=2`).expect(200)).body)).toEqual([
      settledRows[1].id,
    ]);
    const held = await api.get(`${path}&page=3`).expect(200);
    expect(pageIds(held.body)).toEqual([]);
    const next = parseLinks(held.headers.link).next;
    expect(next).toContain('cursor=');
    await settled();
    expect(pageIds((await api.get(next!).expect(200)).body)).toEqual([late.id]);
  });
});
