import { seedDemoData } from '../../src/database/seed/demo-data';
import { toSqlDatetime } from '../../src/database/row-values';
import { startWarmedTestApp, TestApp } from '../kit';

/**
 * A role's pages in creation order more than 1,000 rows from both ends are positioned by the
 * users' rollup (rows per role and hour). Once a user's role has changed since it was read, its
 * hours are wrong for both roles: such a page is walked instead, and one in the far half counts
 * its total afresh, as the README says.
 */
describe('a role’s positioned pages after users changed role', () => {
  let kit: TestApp;
  let token: string;
  let role: number;

  beforeAll(async () => {
    kit = await startWarmedTestApp(
      (seeding) =>
        seedDemoData(seeding.dataSource, {
          users: 14_000,
          activities: 100,
          organizations: 3,
          batchSize: 2000,
          now: new Date('2026-11-21T00:00:00.000Z'),
        }),
      {
        env: {
          TAIL_HOLDBACK_MS: '0',
          RATE_LIMIT_PER_MINUTE: '0',
          // What a count allows for changes made while it ran: the change below is older.
          COUNT_CACHE_RECOUNT_TIMEOUT_MS: '1000',
        },
      },
    );
    token = await kit.token();
    [{ role }] = await kit.dataSource.query<{ role: number }[]>(
      'SELECT role_id AS role FROM users GROUP BY role_id ORDER BY COUNT(*) DESC LIMIT 1',
    );
    // The rollup was read at the start: in it, these early users are still in other roles.
    await kit.dataSource.query(
      `UPDATE users SET role_id = ${role}, updated_at = '${toSqlDatetime(new Date())}'
        WHERE id IN (SELECT id FROM (SELECT id FROM users WHERE role_id <> ${role}
                                      ORDER BY created_at, id LIMIT 40) moved)`,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
  }, 180_000);
  afterAll(() => kit?.close());

  const expected = async (offset: number, limit: number) =>
    (
      await kit.dataSource.query<{ id: number }[]>(
        `SELECT id FROM users WHERE role_id = ${role} ORDER BY created_at, id LIMIT ${limit} OFFSET ${offset}`,
      )
    ).map((row) => Number(row.id));

  it.each([
    ['in the first half', 1200],
    ['in the far half', 2600],
    // The total is now newer than the change; the rollup is not (hr42).
    ['in the first half again, after that count', 1240],
  ])('reads a page %s with the database’s rows', async (label, offset) => {
    const limit = 40;
    const [{ n }] = await kit.dataSource.query<{ n: number }[]>(
      `SELECT COUNT(*) AS n FROM users WHERE role_id = ${role}`,
    );
    // More than 1,000 rows from both ends: positioned, were it not for the change.
    expect(Number(n) - offset - limit).toBeGreaterThan(1000);
    const page = offset / limit + 1;
    const reply = await kit
      .as(token)
      .get(`/v1/users?role_id=${role}&sort=created_at&limit=${limit}&page=${page}`)
      .expect(200);
    expect(reply.body.data.map((user: { id: number }) => user.id)).toEqual(
      await expected(offset, limit),
    );
    if (offset * 2 > Number(n)) expect(reply.headers['x-total-count']).toBe(String(n));
    if (label.startsWith('in the far half')) expect(offset * 2).toBeGreaterThan(Number(n));
  });
});
