import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { CountCache } from './count-cache';
import { buildCriteria, Condition, criteriaKey, ListingCriteria } from './listing-criteria';
import type { ListingQuery } from './listing-query.dto';
import type { ListingRepository, ListingTotal, PageOptions } from './listing.repository';
import { Page } from './page';

/** The paging rules every listing follows: scope, filters, totals and the requested page. */
@Injectable()
export class ListingPager {
  private readonly options: PageOptions;
  /** A total's recount in the background: no request waits for it, so it may take longer. */
  private readonly recountOptions: PageOptions;

  constructor(
    private readonly counts: CountCache,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.options = {
      statementTimeoutMs: config.database.statementTimeoutMs,
      preparedStatements: config.database.preparedStatements > 0,
    };
    this.recountOptions = {
      ...this.options,
      statementTimeoutMs: config.countCacheRecountTimeoutMs,
    };
  }

  async paginate<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<Page<TItem>> {
    const criteria = buildCriteria(repository.definition, query, principal);
    const offset = (query.page - 1) * query.limit;
    const key = criteriaKey(repository.definition.resource, criteria);
    const keyset = splitKeyset(criteria);
    // When this request is the one that counts, it reads its page in the count's snapshot.
    let countedWithPage: TItem[] | undefined;
    const countWithPage = async () => {
      const result = await repository.countAndFindPage(criteria, offset, query.limit, this.options);
      countedWithPage = result.items;
      return result.total;
    };
    // A recount in the background has no request waiting for a page: it counts only, under the
    // recount's own time limit. (A keyset total is counted on the request's path, in parts.)
    const recount = keyset
      ? () => this.countKeyset(repository, keyset)
      : () => repository.count(criteria, this.recountOptions);
    const counted = await this.counts.get(key, keyset ? recount : countWithPage, recount);
    // A page past the end is answered without walking the index to its end.
    const items =
      countedWithPage ??
      (offset < counted.total
        ? await repository.findPageAfterCount(criteria, offset, query.limit, counted, this.options)
        : []);
    return new Page(items, query.page, query.limit, counted.total);
  }

  /**
   * The total of a keyset walk (`after_id=N`: ids above N) at a bounded cost per step: the rows
   * beyond the next bucket boundary B (a multiple of KEYSET_BUCKET) are counted once per TTL and
   * shared by every step of every walk inside that bucket; only the ids between N and B, at most
   * KEYSET_BUCKET of them on the primary key, are counted per step.
   */
  private async countKeyset<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    keyset: Keyset,
  ): Promise<ListingTotal> {
    const { base, bound, upwards } = keyset;
    const boundary = upwards
      ? Math.ceil(bound / KEYSET_BUCKET) * KEYSET_BUCKET
      : Math.floor(bound / KEYSET_BUCKET) * KEYSET_BUCKET;
    // Beyond the boundary, and from the bound up to the boundary (or down, for before_id).
    const [past, within] = upwards ? ['>', '<='] : ['<', '>='];
    const beyond: Condition = {
      sql: `t.id ${past} :keyset_boundary`,
      params: { keyset_boundary: boundary },
    };
    const between: Condition = {
      sql: `t.id ${past} :keyset_bound AND t.id ${within} :keyset_boundary`,
      params: { keyset_bound: bound, keyset_boundary: boundary },
    };
    const beyondCriteria = { ...base, conditions: [...base.conditions, beyond] };
    const [far, near] = await Promise.all([
      this.counts.get(criteriaKey(repository.definition.resource, beyondCriteria), () =>
        repository.count(beyondCriteria, this.options),
      ),
      repository.count({ ...base, conditions: [...base.conditions, between] }, this.options),
    ]);
    return { total: far.total + near.total, maxId: Math.max(far.maxId, near.maxId) };
  }
}

/** Ids per keyset bucket: the most a keyset step counts by itself. */
const KEYSET_BUCKET = 4096;

interface Keyset {
  /** The criteria without the keyset bound. */
  base: ListingCriteria;
  bound: number;
  /** `after_id` (ids above the bound) rather than `before_id`. */
  upwards: boolean;
}

function splitKeyset(criteria: ListingCriteria): Keyset | undefined {
  const index = criteria.conditions.findIndex(
    (condition) => 'after_id' in condition.params || 'before_id' in condition.params,
  );
  if (index < 0) return undefined;
  const condition = criteria.conditions[index];
  const upwards = 'after_id' in condition.params;
  const bound = Number(upwards ? condition.params.after_id : condition.params.before_id);
  if (!Number.isSafeInteger(bound)) return undefined;
  const conditions = criteria.conditions.filter((_, i) => i !== index);
  // Both bounds at once: count plainly.
  if (conditions.some((c) => 'after_id' in c.params || 'before_id' in c.params)) return undefined;
  return { base: { ...criteria, conditions }, bound, upwards };
}
