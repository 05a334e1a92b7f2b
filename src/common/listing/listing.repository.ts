import { DataSource, ObjectLiteral, QueryRunner, SelectQueryBuilder } from 'typeorm';
import type { ListingDefinition, SortDirection } from './listing-definition';
import type { ListingCriteria } from './listing-criteria';
import { StatementLimit } from './statement-limit';

/**
 * A total as counted: how many rows matched, and the highest id among them (0 when none). The
 * id lets a later request account for rows appended since the count without counting again.
 */
export interface ListingTotal {
  total: number;
  maxId: number;
}

export interface PageOptions {
  /** Time limit of each statement, in ms (0 = none). */
  statementTimeoutMs?: number;
}

/**
 * The SQL every listing shares. Pages are fetched in two steps: the page's ids are read from the
 * listing's own table alone (an index walk, no joins), then only those rows are loaded with their
 * joins by `findItemsByIds`.
 *
 * A page in the far half of the listing is read from the other end (the order reversed, the
 * offset counted from the end, the ids put back in order), so no page walks more than half the
 * index. Counting from the end needs the total of the very snapshot the walk reads:
 * `countAndFindPage` counts and walks in one read-only REPEATABLE READ transaction;
 * `findPageAfterCount` (the total came from the cache) first counts, in the walk's snapshot, the
 * rows appended since that total was counted (ids above its `maxId`, a short range).
 */
export abstract class ListingRepository<TItem extends { id: number }> {
  abstract readonly definition: ListingDefinition;
  /** Full counts this repository has run (read by tests to prove totals are shared). */
  countStatements = 0;

  constructor(protected readonly dataSource: DataSource) {}

  /** Loads the full items for the given ids, in any order. */
  protected abstract findItemsByIds(ids: number[]): Promise<TItem[]>;

  async count(criteria: ListingCriteria, options: PageOptions = {}): Promise<ListingTotal> {
    return this.withRunner(
      false,
      (runner, limit) => this.countTotal(runner, limit, criteria),
      options,
    );
  }

  /** Counts and reads the page's ids in one snapshot, then loads the page's rows. */
  async countAndFindPage(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    options: PageOptions = {},
  ): Promise<{ total: ListingTotal; items: TItem[] }> {
    const { total, ids } = await this.withRunner(
      true,
      async (runner, statementLimit) => {
        const counted = await this.countTotal(runner, statementLimit, criteria);
        const pageIds = await this.idsIn(
          runner,
          statementLimit,
          criteria,
          offset,
          limit,
          counted.total,
        );
        return { total: counted, ids: pageIds };
      },
      options,
    );
    return { total, items: await this.itemsInOrder(ids) };
  }

  /** Reads a page given a total counted earlier (e.g. cached). */
  async findPageAfterCount(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    known: ListingTotal,
    options: PageOptions = {},
  ): Promise<TItem[]> {
    const nearEnd = walksFromEnd(offset, limit, known.total);
    const ids = await this.withRunner(
      nearEnd,
      async (runner, statementLimit) => {
        let total = known.total;
        if (nearEnd) {
          const appended = await this.countIn(runner, statementLimit, {
            ...criteria,
            conditions: [
              ...criteria.conditions,
              { sql: 't.id > :counted_max_id', params: { counted_max_id: known.maxId } },
            ],
          });
          total += appended.total;
        }
        return this.idsIn(runner, statementLimit, criteria, offset, limit, total);
      },
      options,
    );
    return this.itemsInOrder(ids);
  }

  /** The page's ids in the listing's order, walking from whichever end is nearer. */
  private async idsIn(
    runner: QueryRunner,
    statementLimit: StatementLimit,
    criteria: ListingCriteria,
    offset: number,
    limit: number,
    total: number,
  ): Promise<number[]> {
    if (offset >= total) return [];
    const fromEnd = walksFromEnd(offset, limit, total);
    const query = this.pageIdsQuery(criteria, fromEnd ? 'from end' : 'forward');
    if (fromEnd) {
      const end = Math.min(total, offset + limit);
      query.offset(total - end).limit(end - offset);
    } else {
      query.offset(offset).limit(limit);
    }
    // Unfiltered in id order, the narrow id index is the cheapest walk; the optimizer prefers the
    // primary key, which holds whole rows.
    const idIndex =
      criteria.conditions.length === 0 && criteria.sortColumn === 'id'
        ? await statementLimit.narrowIdIndex(this.definition.table)
        : undefined;
    const rows = await statementLimit.run<{ id: number | string }>(
      runner,
      query,
      idIndex ? { table: this.definition.table, index: idIndex } : undefined,
    );
    const ids = rows.map((row) => Number(row.id));
    return fromEnd ? ids.reverse() : ids;
  }

  /** A full count of the listing (what the count cache saves). */
  private countTotal(
    runner: QueryRunner,
    statementLimit: StatementLimit,
    criteria: ListingCriteria,
  ): Promise<ListingTotal> {
    this.countStatements++;
    return this.countIn(runner, statementLimit, criteria);
  }

  private async countIn(
    runner: QueryRunner,
    statementLimit: StatementLimit,
    criteria: ListingCriteria,
  ): Promise<ListingTotal> {
    const query = this.countQuery(criteria);
    const [row] = await statementLimit.run<{ total: number | string; max_id: unknown }>(
      runner,
      query,
    );
    return { total: Number(row?.total ?? 0), maxId: Number(row?.max_id ?? 0) };
  }

  private async itemsInOrder(ids: number[]): Promise<TItem[]> {
    if (ids.length === 0) return [];
    const byId = new Map((await this.findItemsByIds(ids)).map((item) => [item.id, item]));
    return ids.map((id) => byId.get(id)).filter((item): item is TItem => item !== undefined);
  }

  /**
   * Runs `work` on one connection (a replica's when there are any), inside a read-only
   * REPEATABLE READ transaction when `snapshot` is set.
   */
  private async withRunner<T>(
    snapshot: boolean,
    work: (runner: QueryRunner, statementLimit: StatementLimit) => Promise<T>,
    options: PageOptions,
  ): Promise<T> {
    const runner = this.dataSource.createQueryRunner('slave');
    try {
      const statementLimit = await StatementLimit.for(
        this.dataSource,
        options.statementTimeoutMs ?? 0,
      );
      if (!snapshot) return await work(runner, statementLimit);
      await statementLimit.beginSnapshot(runner);
      try {
        const result = await work(runner, statementLimit);
        await statementLimit.commit(runner);
        return result;
      } catch (error) {
        await statementLimit.rollback(runner).catch(() => undefined);
        throw error;
      }
    } finally {
      await runner.release();
    }
  }

  /**
   * The statements a page runs on the listing's table (the count, and the page's ids walked
   * forward), as SQL and positional parameters: what the index test EXPLAINs.
   */
  describeQueries(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
  ): { name: string; sql: string; params: unknown[] }[] {
    return [
      ['count', this.countQuery(criteria)] as const,
      ['page ids', this.pageIdsQuery(criteria, 'forward').offset(offset).limit(limit)] as const,
    ].map(([name, query]) => {
      const [sql, params] = query.getQueryAndParameters();
      return { name, sql, params: params as unknown[] };
    });
  }

  private countQuery(criteria: ListingCriteria): SelectQueryBuilder<ObjectLiteral> {
    return this.filtered(criteria).select('COUNT(*)', 'total').addSelect('MAX(t.id)', 'max_id');
  }

  private pageIdsQuery(
    criteria: ListingCriteria,
    walk: 'forward' | 'from end',
  ): SelectQueryBuilder<ObjectLiteral> {
    const direction = walk === 'forward' ? criteria.direction : reverse(criteria.direction);
    return this.filtered(criteria)
      .select('t.id', 'id')
      .orderBy(`t.${criteria.sortColumn}`, direction)
      .addOrderBy('t.id', direction);
  }

  private filtered(criteria: ListingCriteria): SelectQueryBuilder<ObjectLiteral> {
    const query = this.dataSource.createQueryBuilder().from(this.definition.table, 't');
    const sqlite = this.dataSource.options.type !== 'mysql';
    for (const condition of criteria.conditions) {
      query.andWhere((sqlite && condition.sqliteSql) || condition.sql, condition.params);
    }
    return query;
  }
}

/**
 * Whether the page is nearer the end of the listing than its start. The first page never is:
 * reading it forward costs no more than its own rows.
 */
const walksFromEnd = (offset: number, limit: number, total: number): boolean =>
  offset >= limit && offset * 2 + limit > total;

const reverse = (direction: SortDirection): SortDirection => (direction === 'ASC' ? 'DESC' : 'ASC');
