import { DataSource, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import type { ListingDefinition } from './listing-definition';
import type { ListingCriteria } from './listing-criteria';

/**
 * The SQL every listing shares. Pages are fetched in two steps: the page's ids are read from the
 * listing's own table alone (an index walk, no joins), then only those rows are loaded with their
 * joins by `findItemsByIds`.
 */
export abstract class ListingRepository<TItem extends { id: number }> {
  abstract readonly definition: ListingDefinition;

  constructor(protected readonly dataSource: DataSource) {}

  /** Loads the full items for the given ids, in any order. */
  protected abstract findItemsByIds(ids: number[]): Promise<TItem[]>;

  async count(criteria: ListingCriteria): Promise<number> {
    const row = await this.countQuery(criteria).getRawOne<{
      total: number | string;
    }>();
    return Number(row?.total ?? 0);
  }

  async findPage(criteria: ListingCriteria, offset: number, limit: number): Promise<TItem[]> {
    const idRows = await this.pageIdsQuery(criteria, offset, limit).getRawMany<{
      id: number | string;
    }>();
    const ids = idRows.map((row) => Number(row.id));
    if (ids.length === 0) return [];
    const byId = new Map((await this.findItemsByIds(ids)).map((item) => [item.id, item]));
    return ids.map((id) => byId.get(id)).filter((item): item is TItem => item !== undefined);
  }

  /**
   * The statements a page runs on the listing's table, as SQL and positional parameters: what the
   * index test EXPLAINs, so that it checks the real queries.
   */
  describeQueries(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
  ): { name: string; sql: string; params: unknown[] }[] {
    return [
      ['count', this.countQuery(criteria)] as const,
      ['page ids', this.pageIdsQuery(criteria, offset, limit)] as const,
    ].map(([name, query]) => {
      const [sql, params] = query.getQueryAndParameters();
      return { name, sql, params: params as unknown[] };
    });
  }

  private countQuery(criteria: ListingCriteria): SelectQueryBuilder<ObjectLiteral> {
    return this.filtered(criteria).select('COUNT(*)', 'total');
  }

  private pageIdsQuery(
    criteria: ListingCriteria,
    offset: number,
    limit: number,
  ): SelectQueryBuilder<ObjectLiteral> {
    return this.filtered(criteria)
      .select('t.id', 'id')
      .orderBy(`t.${criteria.sortColumn}`, criteria.direction)
      .addOrderBy('t.id', criteria.direction)
      .offset(offset)
      .limit(limit);
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
