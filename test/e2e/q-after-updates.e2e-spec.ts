import { seedDemoData } from '../../src/database/seed/demo-data';
import { startWarmedTestApp, TestApp } from '../kit';

/**
 * `q` read as a union of the name's and the e-mail's prefix ranges (MySQL/MariaDB) must find every
 * match after users change. On MariaDB 10.11 a filesort over an index on a VIRTUAL generated
 * column (`name_email_shared`) left out matches once one of them was updated: `q=…` within an
 * organization sorted by name served one of four users while counting four (migration
 * 1765411200000 makes the column STORED).
 */
describe('q within an organization, sorted by name or e-mail, after users change', () => {
  let kit: TestApp;
  let organization: number;

  beforeAll(async () => {
    // Started on the rows, as after a restart: its warm-up counts each organization's users, and
    // the plans then know an organization's name index is long beside what `q` matches.
    kit = await startWarmedTestApp(
      async (seeding) => {
        // Demo users: e-mails made from names, as the narrowing expects most to be.
        await seedDemoData(seeding.dataSource, { users: 2000, activities: 0, organizations: 8 });
        const [{ id }] = await seeding.dataSource.query<{ id: number }[]>(
          'SELECT id FROM organizations ORDER BY id LIMIT 1 OFFSET 1',
        );
        organization = Number(id);
        const role = (await seeding.data.role()).id;
        for (const name of ['Ann One', 'Bob Two', 'Cid Three', 'Dee Four']) {
          await seeding.data.user({
            name,
            email: `reprozz.${name.split(' ')[0].toLowerCase()}@x.example`,
            role_id: role,
            organization_id: organization,
          });
        }
      },
      { env: { RATE_LIMIT_PER_MINUTE: '0' } },
    );
  }, 60_000);

  afterAll(() => kit.close());

  const served = async (sort: string) => {
    const reply = await kit
      .as(await kit.token())
      .get(`/v1/users?q=reprozz&organization_id=${organization}&sort=${sort}`)
      .expect(200);
    return {
      names: (reply.body.data as { name: string }[]).map((user) => user.name),
      total: Number(reply.headers['x-total-count']),
    };
  };

  it('serves every match in each text order after a rename and a role change', async () => {
    // Counted first, as a consumer's earlier pages would: the plans then know how few match.
    for (const sort of ['name', '-name', 'email', '-email']) {
      expect((await served(sort)).total).toBe(4);
    }
    await kit.dataSource.query(
      "UPDATE users SET name = 'Bob Renamed', updated_at = ? WHERE email LIKE 'reprozz.bob%'",
      [new Date().toISOString().slice(0, 23).replace('T', ' ')],
    );
    await kit.dataSource.query(
      "UPDATE users SET role_id = role_id, updated_at = ? WHERE email LIKE 'reprozz.cid%'",
      [new Date().toISOString().slice(0, 23).replace('T', ' ')],
    );
    const byName = ['Ann One', 'Bob Renamed', 'Cid Three', 'Dee Four'];
    expect(await served('name')).toEqual({ names: byName, total: 4 });
    expect(await served('-name')).toEqual({ names: [...byName].reverse(), total: 4 });
    const byEmail = ['Ann One', 'Bob Renamed', 'Cid Three', 'Dee Four'];
    expect(await served('email')).toEqual({ names: byEmail, total: 4 });
    expect(await served('-email')).toEqual({ names: [...byEmail].reverse(), total: 4 });
  });
});
