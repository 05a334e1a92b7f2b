import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { CountCache } from './count-cache';
import { buildCriteria, criteriaKey } from './listing-criteria';
import type { ListingQuery } from './listing-query.dto';
import type { ListingRepository, PageOptions } from './listing.repository';
import { Page } from './page';

/** The paging rules every listing follows: scope, filters, totals and the requested page. */
@Injectable()
export class ListingPager {
  private readonly options: PageOptions;

  constructor(
    private readonly counts: CountCache,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.options = { statementTimeoutMs: config.database.statementTimeoutMs };
  }

  async paginate<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<Page<TItem>> {
    const criteria = buildCriteria(repository.definition, query, principal);
    const offset = (query.page - 1) * query.limit;
    // When this request is the one that counts, it reads its page in the count's snapshot.
    let countedWithPage: TItem[] | undefined;
    const counted = await this.counts.get(
      criteriaKey(repository.definition.resource, criteria),
      async () => {
        const result = await repository.countAndFindPage(
          criteria,
          offset,
          query.limit,
          this.options,
        );
        countedWithPage = result.items;
        return result.total;
      },
    );
    // A page past the end is answered without walking the index to its end.
    const items =
      countedWithPage ??
      (offset < counted.total
        ? await repository.findPageAfterCount(criteria, offset, query.limit, counted, this.options)
        : []);
    return new Page(items, query.page, query.limit, counted.total);
  }
}
