import { LoginActivityRow, startTestApp, TestApp, watchStatements } from '../kit';

/**
 * Totals (page_count, X-Total-Count) come from a short-lived cache; pages in the far half of a
 * listing are read from its other end. These tests hold both to "never wrong, at most TTL old".
 */
describe('listing totals and deep pages', () => {
  const listAll = (kit: TestApp, token: string, query: string) =>
    kit.http().get(`/v1/login_activities?${query}`).set('Authorization', `Bearer ${token}`);

  /** The order the API promises: by the column, ties on id in the same direction. */
  function expectedOrder(rows: LoginActivityRow[], sort: string): number[] {
    const descending = sort.startsWith('-');
    const column = (descending ? sort.slice(1) : sort) as 'id' | 'created_at';
    const key = (row: LoginActivityRow) => (column === 'id' ? row.id : row.created_at.getTime());
    const sign = descending ? -1 : 1;
    return [...rows].sort((a, b) => sign * (key(a) - key(b) || a.id - b.id)).map((row) => row.id);
  }

  /** 25 rows whose timestamps repeat (ties break on id) and do not follow the ids. */
  async function makeRows(kit: TestApp, count = 25, from = 0): Promise<LoginActivityRow[]> {
    return kit.data.many(count, (i) =>
      kit.data.loginActivity({
        created_at: new Date(Date.UTC(2026, 0, 1) + (((from + i) * 7) % 5) * 60_000),
      }),
    );
  }

  describe('with totals cached for a minute', () => {
    let kit: TestApp;
    let token: string;
    let rows: LoginActivityRow[];

    beforeAll(async () => {
      kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: '60000' } });
      token = await kit.token();
      rows = await makeRows(kit);
    });

    afterAll(() => kit.close());

    it.each(['id', '-id', 'created_at', '-created_at'])(
      'pages from either end give the forward order exactly (sort=%s)',
      async (sort) => {
        const limit = 4;
        const seen: number[] = [];
        // The first request counts (and reads its page in the count's snapshot); later ones
        // reuse the cached total. Pages 5..7 lie in the far half and are read from the end.
        for (const page of [7, 1, 2, 3, 4, 5, 6]) {
          const response = await listAll(
            kit,
            token,
            `sort=${sort}&limit=${limit}&page=${page}`,
          ).expect(200);
          expect(response.body.pagination.page_count).toBe(7);
          seen[page] = response.body.data.map((item: { id: number }) => item.id);
        }
        expect(seen.slice(1).flat()).toEqual(expectedOrder(rows, sort));
      },
    );

    it('computes a total once for many concurrent requests on the same key', async () => {
      const watch = watchStatements(kit.dataSource);
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          listAll(kit, token, `success=true&limit=2&page=${(i % 6) + 1}`),
        ),
      );
      for (const response of responses) {
        expect(response.status).toBe(200);
        expect(response.headers['x-total-count']).toBe('25');
      }
      expect(watch.fullCounts()).toBe(1);
      watch.stop();
    });

    it('keeps rows current and far pages exact when rows are appended under a cached total', async () => {
      const sort = 'id';
      await listAll(kit, token, `sort=${sort}&limit=5&otp_required=false`).expect(200);
      const appended = await makeRows(kit, 3, 25);
      const all = [...rows, ...appended];
      const response = await listAll(
        kit,
        token,
        `sort=${sort}&limit=5&otp_required=false&page=5`,
      ).expect(200);
      // The far page was located from the end counting the appended rows, and reports that total
      // of its own snapshot rather than the cached one; its rows are the same as forward.
      expect(response.body.data.map((item: { id: number }) => item.id)).toEqual(
        expectedOrder(all, sort).slice(20, 25),
      );
      expect(response.headers['x-total-count']).toBe('28');
      rows = all;
    });

    it('reads a page past the cached end when rows were appended since', async () => {
      const since = new Date(Date.now() - 60_000).toISOString();
      const path = `/v1/users?created_from=${encodeURIComponent(since)}&sort=created_at`;
      const before = await kit.as(token).get(path).expect(200);
      const user = await kit.data.user({ created_at: new Date(), updated_at: new Date() });
      const after = await kit.as(token).get(path).expect(200);
      // The cached total did not count the new user; its page 1 lists it all the same.
      expect(after.body.data.map((item: { id: number }) => item.id)).toEqual([
        ...before.body.data.map((item: { id: number }) => item.id),
        user.id,
      ]);
      expect(after.body.pagination.page_count).toBe(1);
    });
  });

  describe('with a short cache time', () => {
    let kit: TestApp;
    let token: string;
    const ttlMs = 1500;

    beforeAll(async () => {
      kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: String(ttlMs) } });
      token = await kit.token();
      await makeRows(kit, 3);
    });

    afterAll(() => kit.close());

    it('refreshes a cached total after its time; rows are never stale', async () => {
      const started = Date.now();
      const first = await listAll(kit, token, 'limit=100').expect(200);
      expect(first.headers['x-total-count']).toBe('3');
      await makeRows(kit, 2, 3);
      const second = await listAll(kit, token, 'limit=100').expect(200);
      expect(second.body.data).toHaveLength(5);
      // Only when this machine was quick enough to ask within the TTL can the total be the old one.
      if (Date.now() - started < ttlMs) expect(second.headers['x-total-count']).toBe('3');

      const deadline = Date.now() + ttlMs + 10_000;
      let total = second.headers['x-total-count'];
      while (total !== '5' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        total = (await listAll(kit, token, 'limit=100').expect(200)).headers['x-total-count'];
      }
      expect(total).toBe('5');
    });
  });

  describe('with the cache off', () => {
    let kit: TestApp;
    let token: string;
    let rows: LoginActivityRow[];

    beforeAll(async () => {
      kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: '0' } });
      token = await kit.token();
      rows = await makeRows(kit, 9);
    });

    afterAll(() => kit.close());

    it('counts every request and answers every page exactly', async () => {
      const watch = watchStatements(kit.dataSource);
      const pages: number[] = [];
      for (const page of [1, 2, 3, 4, 5]) {
        const response = await listAll(kit, token, `sort=-created_at&limit=2&page=${page}`).expect(
          200,
        );
        expect(response.headers['x-total-count']).toBe('9');
        pages.push(...response.body.data.map((item: { id: number }) => item.id));
      }
      expect(pages).toEqual(expectedOrder(rows, '-created_at'));
      expect(watch.fullCounts()).toBe(5);
      watch.stop();
      await makeRows(kit, 1, 9);
      const after = await listAll(kit, token, 'limit=2').expect(200);
      expect(after.headers['x-total-count']).toBe('10');
    });
  });

  describe('keyset walks', () => {
    let kit: TestApp;
    let token: string;
    let ids: number[];

    beforeAll(async () => {
      kit = await startTestApp({ env: { COUNT_CACHE_TTL_MS: '60000' } });
      token = await kit.token();
      const rows = await makeRows(kit, 5);
      // Ids on both sides of the 4096-id buckets the keyset totals are counted in.
      const explicit = [4095, 4096, 4097, 8200, 12289];
      for (const id of explicit) {
        await kit.dataSource.query(
          `INSERT INTO login_activities (id, user_email, authentication_method, ip_address,
             otp_required, success, created_at) VALUES (?, 'k@example.com', 'password',
             '192.0.2.1', 0, 1, '2026-01-01 00:00:00.000')`,
          [id],
        );
      }
      ids = [...rows.map((row) => row.id), ...explicit].sort((a, b) => a - b);
    });

    afterAll(() => kit.close());

    it.each([1, 3, 4095, 4096, 4097, 5000, 8200, 8191, 12289, 20000])(
      'after_id=%i: total and rows are those above the id',
      async (afterId) => {
        const response = await listAll(kit, token, `after_id=${afterId}&limit=2`).expect(200);
        const above = ids.filter((id) => id > afterId);
        expect(response.headers['x-total-count']).toBe(String(above.length));
        expect(response.body.data.map((item: { id: number }) => item.id)).toEqual(
          above.slice(0, 2),
        );
      },
    );

    it.each([1, 4096, 4097, 8192, 9000, 12290, 99999])(
      'before_id=%i (sort=-id): total and rows are those below the id',
      async (beforeId) => {
        const response = await listAll(kit, token, `sort=-id&before_id=${beforeId}&limit=2`).expect(
          200,
        );
        const below = ids.filter((id) => id < beforeId).reverse();
        expect(response.headers['x-total-count']).toBe(String(below.length));
        expect(response.body.data.map((item: { id: number }) => item.id)).toEqual(
          below.slice(0, 2),
        );
      },
    );
  });
});
