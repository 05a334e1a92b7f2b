import { parseLinks, startWarmedTestApp, TestApp } from '../kit';

/**
 * Times before 1970 (the epoch as "no date", old imports) are hours like any other: a histogram's
 * or the rollup's hour of 1969-12-31T23:30 is the hour before the epoch, not the epoch's.
 */
describe('times before 1970', () => {
  let kit: TestApp;
  let token: string;
  let ids: { early: number[]; late: number[] };
  const at = (iso: string) => new Date(iso);

  beforeAll(async () => {
    const early: number[] = [];
    const late: number[] = [];
    kit = await startWarmedTestApp(
      async (seeding) => {
        const add = async (iso: string) =>
          (await seeding.data.loginActivity({ created_at: at(iso), success: false })).id;
        for (let i = 0; i < 4; i++) late.push(await add(`2026-06-01T00:00:0${i}.000Z`));
        early.push(await add('1969-12-31T22:30:00.000Z'));
        for (let i = 0; i < 2; i++) early.push(await add(`1969-12-31T23:30:0${i}.000Z`));
        for (let i = 0; i < 3; i++) early.push(await add('1970-01-01T00:00:00.000Z'));
      },
      { env: { TAIL_HOLDBACK_MS: '0', RATE_LIMIT_PER_MINUTE: '0' } },
    );
    ids = { early, late };
    token = await kit.token();
  }, 90_000);
  afterAll(() => kit?.close());

  const ask = (path: string) => kit.as(token).get(path).expect(200);

  it.each([
    ['created_from=1969-12-31T23:00:00Z&created_to=1970-01-01T01:00:00Z', 5],
    ['success=false&created_to=1970-01-01T00:00:00Z', 3],
    ['created_to=1970-01-01T00:00:00Z', 3],
    ['success=false&created_from=1969-12-31T22:00:00Z&created_to=1969-12-31T23:00:00Z', 1],
  ])('counts %s as the database does', async (query, rows) => {
    const reply = await ask(`/v1/login_activities?${query}&limit=100`);
    expect(reply.body.data).toHaveLength(rows);
    expect(reply.headers['x-total-count']).toBe(String(rows));
  });

  it('walks in time order from a keyset bound through the hour before the epoch', async () => {
    const seen: number[] = [];
    let next: string | undefined =
      `/v1/login_activities?sort=created_at&after_id=${ids.late[3]}&limit=2`;
    while (next) {
      const reply = await ask(next);
      seen.push(...reply.body.data.map((row: { id: number }) => row.id));
      next = parseLinks(reply.headers.link).next;
    }
    expect(seen).toEqual(ids.early);
  });
});
