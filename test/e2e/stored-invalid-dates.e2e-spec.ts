import request from 'supertest';
import { startTestApp, TestApp, walkIds } from '../kit';

/**
 * Dates a writer stored that are no calendar dates: MariaDB's default sql_mode takes a zero month
 * or day (`2026-00-10`), ALLOW_INVALID_DATES a 31 February, and SQLite any text. A walk by `next`
 * steps past each exactly as the database orders it: before, a cursor's `new Date('2026-00-10')`
 * was invalid (the walk began again, for ever) and '2026-02-31' became 3 March (rows skipped).
 */
describe('a walk over stored dates that are no calendar dates', () => {
  let kit: TestApp;
  let token: string;

  beforeAll(async () => {
    kit = await startTestApp({ env: { TAIL_HOLDBACK_MS: '0' } });
    token = await kit.token();
    const times = [
      '2026-00-10 00:00:00.000',
      '2026-00-10 00:00:00.000',
      '2026-02-31 12:00:00.000',
      '2026-03-01 00:00:00.000',
      '2026-03-02 00:00:00.000',
      '2026-11-00 10:00:00.000',
    ];
    const runner = kit.dataSource.createQueryRunner();
    try {
      if (kit.dataSource.options.type === 'mysql') {
        await runner.query("SET SESSION sql_mode = 'ALLOW_INVALID_DATES'");
      }
      for (const [i, at] of times.entries()) {
        await runner.query(
          `INSERT INTO login_activities (user_email, authentication_method, ip_address,
             otp_required, success, created_at) VALUES (?, 'password', '192.0.2.1', 0, 1, ?)`,
          [`dated${i}@example.test`, at],
        );
      }
    } finally {
      await runner.release();
    }
  });

  afterAll(() => kit.close());

  // Past the contract check: such a date is no `date-time`, and the reply says what is stored.
  const client = () => ({
    get: (path: string) =>
      request(kit.app.getHttpServer()).get(path).set('Authorization', `Bearer ${token}`),
  });

  it.each(['created_at', '-created_at'])(
    'visits every row once in the database’s order (sort=%s)',
    async (sort) => {
      const direction = sort.startsWith('-') ? 'DESC' : 'ASC';
      const rows = await kit.dataSource.query<{ id: number }[]>(
        `SELECT id FROM login_activities ORDER BY created_at ${direction}, id ${direction}`,
      );
      const ids = await walkIds(client(), `/v1/login_activities?sort=${sort}&limit=1`, 20);
      expect(ids).toEqual(rows.map((row) => Number(row.id)));
    },
  );

  it('answers a page whose row holds text no date reads (SQLite takes any), as stored', async () => {
    if (kit.dataSource.options.type === 'mysql') return; // a DATETIME holds none
    await kit.dataSource.query(
      `INSERT INTO login_activities (user_email, authentication_method, ip_address, otp_required,
         success, created_at) VALUES ('epoch@example.test', 'password', '192.0.2.1', 0, 1, '1700000000')`,
    );
    const reply = await client().get('/v1/login_activities?sort=-id&limit=1').expect(200);
    expect(reply.body.data[0]).toMatchObject({ created_at: '1700000000' });
    // A walk in created_at order steps past it as the database orders it (text after dates).
    const rows = await kit.dataSource.query<{ id: number }[]>(
      'SELECT id FROM login_activities ORDER BY created_at, id',
    );
    const ids = await walkIds(client(), '/v1/login_activities?sort=created_at&limit=1', 20);
    expect(ids).toEqual(rows.map((row) => Number(row.id)));
  });
});
