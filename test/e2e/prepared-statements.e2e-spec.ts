import { startTestApp, TestApp } from '../kit';

/**
 * Listing statements run as prepared statements on MySQL/MariaDB, prepared once per connection:
 * a walk through the pages of one listing prepares its count and its page statement once, then
 * only executes them. With one pooled connection, that connection's own status counters show it.
 */
async function statementCounters(kit: TestApp): Promise<{ prepare: number; execute: number }> {
  const rows: { Variable_name: string; Value: string }[] = await kit.dataSource.query(
    "SHOW SESSION STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_execute')",
  );
  const value = (name: string) => Number(rows.find((row) => row.Variable_name === name)?.Value);
  return { prepare: value('Com_stmt_prepare'), execute: value('Com_stmt_execute') };
}

async function walkTwoPages(kit: TestApp, token: string): Promise<number[][]> {
  const pages: number[][] = [];
  for (const page of [1, 2]) {
    const res = await kit
      .http()
      .get(`/v1/login_activities?page=${page}&limit=2`)
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
    expect(res.body.pagination).toEqual({ current_page: page, limit: 2, page_count: 5 });
    pages.push(res.body.data.map((item: { id: number }) => item.id));
  }
  return pages;
}

describe.each([
  // The count, the page, and from page 2 on the count of the rows above the settled id (the
  // kit's hold-back is 0: every id seen has settled).
  { prepared: '64', statementsPerWalk: { prepare: 3, execute: 5 } },
  { prepared: '0', statementsPerWalk: { prepare: 0, execute: 0 } },
])(
  'listing statements with DB_PREPARED_STATEMENTS=$prepared',
  ({ prepared, statementsPerWalk }) => {
    let kit: TestApp;
    let token: string;
    let ids: number[];

    beforeAll(async () => {
      kit = await startTestApp({
        // One connection, so its session counters see every statement; a count per request, so
        // each page runs both statements.
        env: { DB_POOL_SIZE: '1', COUNT_CACHE_TTL_MS: '0', DB_PREPARED_STATEMENTS: prepared },
      });
      token = await kit.token();
      const rows = await kit.data.many(9, () => kit.data.loginActivity());
      ids = rows.map((row) => row.id).sort((a, b) => a - b);
    });

    afterAll(() => kit.close());

    it('reads every page of a walk right, and prepares each statement once per connection', async () => {
      const mysql = kit.dataSource.options.type === 'mysql';
      const before = mysql ? await statementCounters(kit) : undefined;

      expect(await walkTwoPages(kit, token)).toEqual([ids.slice(0, 2), ids.slice(2, 4)]);

      if (before) {
        const after = await statementCounters(kit);
        // The count and the page statement; pages 1 and 2 differ only in their OFFSET parameter.
        expect({
          prepare: after.prepare - before.prepare,
          execute: after.execute - before.execute,
        }).toEqual(statementsPerWalk);
      }
    });
  },
);
