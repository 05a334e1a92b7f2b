import type { IndexPath } from '../../src/common/listing/listing-definition';
import { servedListings } from './listing-schema';
import type { TestApp } from './test-app';

/** The plans a request's statements ran, and what in them differs from the plan they name. */
export interface PlanCheck {
  problems: string[];
  /** The kinds of plan the pages ran: a `walk` of an index in the sort's order, or a `sort`. */
  kinds: Set<string>;
}

/**
 * EXPLAINs the statements a request really runs on a listed table (the count and the page, caught
 * on their way to the driver), on MySQL/MariaDB and SQLite alike. Every statement must read the
 * index it names (never a full scan: MySQL/MariaDB `type=ALL`, SQLite a plain `SCAN`); a walk plan
 * (the index in the sort's order) also never sorts (`Using filesort`, `USE TEMP B-TREE`), while a
 * sort plan reads its index and sorts what it found. Only the listed table (`t`) counts: the
 * deferred join's outer ORDER BY sorts the page's own rows, and a histogram groups by design.
 *
 *   const plans = listingPlans(kit); // once the rows are in: it ANALYZEs the listed tables first
 *   const { problems } = await plans.checkAll('/v1/things', filters, sortKeys(definition), orgId, definition.indexes);
 *   expect(problems).toEqual([]);
 */
export function listingPlans(kit: TestApp) {
  const mysql = kit.dataSource.options.type === 'mysql';
  /** The tables of every listing the app serves (a module added to AppModule too). */
  const listedTables = new Set(servedListings(kit).map((definition) => definition.table));
  const tokens = new Map<number | null, Promise<string>>();
  // Fresh statistics, once, before the first check: the plans are priced from them.
  let analyzed: Promise<unknown> | undefined;
  const analyze = () =>
    (analyzed ??= kit.dataSource.query(
      mysql ? `ANALYZE TABLE ${[...listedTables].map((t) => `\`${t}\``).join(', ')}` : 'ANALYZE',
    ));

  /** A full scan of a listed table, by alias (`t`, `x`) or by name. */
  const scansListedTable = (detail: string) => {
    const scanned = /^SCAN (\w+)$/.exec(detail)?.[1];
    return (
      scanned !== undefined && (scanned === 't' || scanned === 'x' || listedTables.has(scanned))
    );
  };

  /** The plan a statement names: its index, and whether that index keeps the ORDER BY's order. */
  function namedPlan(sql: string, paths: readonly IndexPath[]): { index?: string; walk: boolean } {
    // Several indexes (a union of their ranges) are named to MySQL alone: in one FORCE INDEX (an
    // index merge), or one in each branch of a UNION.
    const named = /FORCE INDEX \(([^)]+)\)|INDEXED BY `(\w+)`/.exec(sql);
    const forced = [...sql.matchAll(/FORCE INDEX \(([^)]+)\)/g)].map((m) => m[1]);
    const list = forced.length ? forced.join(',').replace(/[` ]/g, '') : undefined;
    const index = named ? (list ?? named[2]) : /NOT INDEXED/.test(sql) ? 'PRIMARY' : undefined;
    const order = /ORDER BY t\.`?(\w+)/.exec(sql)?.[1];
    // An index may be declared for several paths (`(group, id)`: by group, and by id in a group).
    const walk =
      !order || (index ?? 'PRIMARY') === 'PRIMARY'
        ? order === undefined || order === 'id'
        : paths.some((p) => p.index === index && (p.unique === true || p.sort === order));
    return { index, walk };
  }

  /** What in a statement's plan differs from the plan it names. */
  async function planProblems(
    sql: string,
    params: unknown[],
    plan: { index?: string; walk: boolean },
  ): Promise<string[]> {
    const histogram = /GROUP BY/.test(sql);
    const sorts = plan.walk && !histogram;
    if (mysql) {
      const rows: Record<string, unknown>[] = await kit.dataSource.query(`EXPLAIN ${sql}`, params);
      return rows.flatMap((row) => {
        const table = String(row.table);
        const extra = String(row.Extra ?? '');
        const problems: string[] = [];
        if (['t', 'x'].includes(table) && String(row.type).toUpperCase() === 'ALL') {
          problems.push(`${table}: type=ALL`);
        }
        const key = String(row.key);
        if (
          table === 't' &&
          plan.index &&
          key !== plan.index &&
          !plan.index.split(',').includes(key)
        ) {
          problems.push(`t: key ${String(row.key)}, not ${plan.index}`);
        }
        if (table === 't' && sorts) {
          for (const sort of ['Using filesort', 'Using temporary']) {
            if (extra.includes(sort)) problems.push(`${table}: ${sort} (key ${String(row.key)})`);
          }
        }
        return problems;
      });
    }
    const rows: { id: number; parent: number; detail: string }[] = await kit.dataSource.query(
      `EXPLAIN QUERY PLAN ${sql}`,
      params,
    );
    // SQLite keeps a table in its primary key's order: `SCAN t` for an `ORDER BY id` page is the
    // walk along the primary key (MySQL's `type = index` on PRIMARY), stopped by the LIMIT.
    const walksPrimaryKey = /ORDER BY t\.id (ASC|DESC)( LIMIT|$)/.test(sql) && plan.walk;
    const deferredJoin = /\) p JOIN/.test(sql);
    const problems = rows
      .filter(
        ({ detail, parent }) =>
          (scansListedTable(detail) && !(walksPrimaryKey && detail === 'SCAN t')) ||
          (/USE TEMP B-TREE/.test(detail) && sorts && !(deferredJoin && parent === 0)),
      )
      .map(({ detail }) => detail);
    const reads = rows.filter(({ detail }) => /^(SCAN|SEARCH) t\b/.test(detail));
    if (
      plan.index &&
      plan.index !== 'PRIMARY' &&
      !reads.some((r) => r.detail.includes(plan.index!))
    ) {
      problems.push(`t not read through ${plan.index}: ${reads.map((r) => r.detail).join('; ')}`);
    }
    return problems;
  }

  const tokenFor = (organizationId: number | null): Promise<string> => {
    if (!tokens.has(organizationId)) tokens.set(organizationId, kit.token({ organizationId }));
    return tokens.get(organizationId)!;
  };

  interface Reply {
    status: number;
    body: {
      pagination?: { page_count: number };
      errors?: { parameter: string; message: string }[];
    };
    statements: { name: string; sql: string; params: unknown[] }[];
  }

  /** A request's reply and the statements it ran on the listed table, as the driver got them. */
  async function request(
    path: string,
    params: Record<string, string>,
    organizationId: number | null,
  ): Promise<Reply> {
    const driver = kit.dataSource.driver;
    const escape = jest.spyOn(driver, 'escapeQueryWithParameters');
    try {
      const reply = await kit
        .as(await tokenFor(organizationId))
        .get(`${path}?${new URLSearchParams(params).toString()}`);
      expect(reply.status).toBe(200);
      const statements = escape.mock.results
        .filter((result) => result.type === 'return')
        .map((result) => result.value as [string, unknown[]])
        .filter(([sql]) => listedTables.has(/FROM `(\w+)` t\b/.exec(sql)?.[1] ?? ''))
        .map(([sql, values]) => ({
          // Counts: the total, or a keyset walk's histogram of rows per id bucket.
          name: /COUNT\(\*\)/.test(sql) ? 'count' : 'page',
          sql,
          params: values,
        }));
      return { status: reply.status, body: reply.body as Reply['body'], statements };
    } finally {
      escape.mockRestore();
    }
  }

  /**
   * Requests `params` near the start (page 2) and in the far half (90% of the pages, read from
   * the end): the plan problems of every statement run, and the kinds of plan they ran.
   */
  async function check(
    path: string,
    params: Record<string, string>,
    organizationId: number | null,
    paths: readonly IndexPath[],
  ): Promise<PlanCheck> {
    await analyze();
    const label = `?${new URLSearchParams(params).toString()} scope=${organizationId ?? '-'}`;
    const near = await request(path, { ...params, page: '2', limit: '5' }, organizationId);
    expect({ label, status: near.status }).toEqual({ label, status: 200 });
    const pages = near.body.pagination?.page_count ?? 0;
    const replies = [near];
    if (pages > 3) {
      const far = { ...params, page: String(Math.floor(pages * 0.9)), limit: '5' };
      replies.push(await request(path, far, organizationId));
    }
    const problems: string[] = [];
    const kinds = new Set<string>();
    for (const reply of replies) {
      for (const statement of reply.statements) {
        const plan = namedPlan(statement.sql, paths);
        if (statement.name === 'page') {
          kinds.add(plan.walk ? 'walk' : 'sort');
        }
        const found = await planProblems(statement.sql, statement.params, plan);
        if (found.length) {
          problems.push(`${label} ${statement.name}: ${statement.sql} → ${found.join('; ')}`);
        }
      }
    }
    return { problems, kinds };
  }

  /** Each filter alone (unscoped and scoped) and each pair, with each sort. */
  async function checkAll(
    path: string,
    filters: Record<string, string>,
    sorts: string[],
    scope: number,
    paths: readonly IndexPath[],
  ): Promise<PlanCheck & { checked: number }> {
    const entries = Object.entries(filters);
    const combinations: [string, string][][] = [[], ...entries.map((entry) => [entry])];
    for (let i = 0; i < entries.length; i++) {
      for (let j = i + 1; j < entries.length; j++) combinations.push([entries[i], entries[j]]);
    }
    const problems: string[] = [];
    const kinds = new Set<string>();
    let checked = 0;
    for (const combination of combinations) {
      for (const sort of sorts) {
        for (const organizationId of combination.length < 2 ? [null, scope] : [null]) {
          const params = { ...Object.fromEntries(combination), sort };
          const result = await check(path, params, organizationId, paths);
          checked += 1;
          problems.push(...result.problems);
          result.kinds.forEach((kind) => kinds.add(kind));
        }
      }
    }
    return { problems, checked, kinds };
  }

  return { request, check, checkAll };
}
