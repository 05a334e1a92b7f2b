import { parseLinks, startWarmedTestApp, TestApp } from '../kit';

/**
 * Times before 1970 (the epoch as "no date", old imports) and at the end of year 9999 are times
 * like any other: a histogram's or the rollup's hour of 1969-12-31T23:59:59.500 is the hour (and
 * second) before the epoch, and a window's last partial hour may end in year 10000.
 */
describe('times before 1970 and at the end of 9999', () => {
  let kit: TestApp;
  let token: string;
  const ids = { late: [] as number[], early: [] as number[], last: 0, users: [] as number[] };

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      async (seeding) => {
        const add = async (iso: string) =>
          (await seeding.data.loginActivity({ created_at: new Date(iso), success: false })).id;
        for (let i = 0; i < 4; i++) ids.late.push(await add(`2026-06-01T00:00:0${i}.000Z`));
        for (const iso of [
          '1969-12-31T22:30:00.000Z',
          '1969-12-31T23:30:00.000Z',
          '1969-12-31T23:30:01.000Z',
          '1969-12-31T23:59:59.500Z',
          '1970-01-01T00:00:00.000Z',
          '1970-01-01T00:00:00.000Z',
          '1970-01-01T00:00:00.000Z',
          '1970-01-01T00:00:00.300Z',
        ])
          ids.early.push(await add(iso));
        ids.last = await add('9999-12-31T23:59:59.999Z');
        const updated = new Date('2023-01-01T00:00:00.000Z');
        for (const iso of [
          '2020-05-05T00:00:00.000Z',
          '1969-12-31T23:59:59.500Z',
          '1969-12-31T23:59:59.700Z',
          '1970-01-01T00:00:00.300Z',
        ]) {
          const user = await seeding.data.user({ created_at: new Date(iso), updated_at: updated });
          ids.users.push(user.id);
        }
      },
      { env: { TAIL_HOLDBACK_MS: '0', RATE_LIMIT_PER_MINUTE: '0' } },
    );
    token = await kit.token();
  }, 90_000);
  afterAll(() => kit?.close());

  const ask = (path: string) => kit.as(token).get(path).expect(200);
  const walk = async (path: string) => {
    const seen: number[] = [];
    let next: string | undefined = path;
    while (next) {
      const reply = await ask(next);
      seen.push(...reply.body.data.map((row: { id: number }) => row.id));
      next = parseLinks(reply.headers.link).next;
    }
    return seen;
  };

  it.each([
    ['created_from=1969-12-31T23:00:00Z&created_to=1970-01-01T01:00:00Z', 7],
    ['success=false&created_to=1970-01-01T00:00:00Z', 4],
    ['created_to=1970-01-01T00:00:00Z', 4],
    ['success=false&created_from=1969-12-31T22:00:00Z&created_to=1969-12-31T23:00:00Z', 1],
    ['created_to=1970-01-01T00:00:00.100Z', 7],
    ['created_from=1969-12-31T23:59:59.600Z&created_to=1980-01-01T00:00:00Z', 4],
    ['created_from=9999-12-31T23:00:00.001Z', 1],
    ['success=false&created_from=9999-12-31T23:00:00.001Z', 1],
    // A leap second (RFC 3339) lies after 23:59:59.999 and before the next minute's rows.
    ['created_to=1969-12-31T23:59:60Z', 4],
    ['created_to=1970-01-01T00:59:60.999%2B01:00', 4],
    ['created_from=1969-12-31T23:59:60.5Z&created_to=1970-01-01T00:00:01Z', 4],
  ])('counts %s as the database does', async (query, rows) => {
    const reply = await ask(`/v1/login_activities?${query}&limit=100`);
    expect(reply.body.data).toHaveLength(rows);
    expect(reply.headers['x-total-count']).toBe(String(rows));
  });

  it.each(['1970-01-01T10:15:60Z', '1969-12-31T23:59:61Z', '1969-12-31T23:59:60'])(
    'answers created_to=%s, no leap second, 400 naming it',
    async (value) => {
      const reply = await kit
        .as(token)
        .get(`/v1/login_activities?created_to=${encodeURIComponent(value)}`)
        .expect(400);
      expect(reply.body.errors).toEqual([{ parameter: 'created_to', message: expect.any(String) }]);
    },
  );

  it('walks in time order from a keyset bound through the hour before the epoch to 9999', async () => {
    const path = `/v1/login_activities?sort=created_at&after_id=${ids.late[3]}&limit=2`;
    expect(await walk(path)).toEqual([...ids.early, ids.last]);
  });

  it('walks a window of updates in creation order through the second before the epoch', async () => {
    const window = 'updated_from=2022-01-01T00:00:00Z&updated_to=2023-06-01T00:00:00Z';
    const seen = await walk(`/v1/users?${window}&sort=created_at&limit=1`);
    expect(seen).toEqual([ids.users[1], ids.users[2], ids.users[3], ids.users[0]]);
  });
});
