import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { CountCache } from './count-cache';
import { buildCriteria, criteriaKey } from './listing-criteria';
import type { ListingQuery } from './listing-query.dto';
import type { ListingRepository } from './listing.repository';
import { Page } from './page';

/** The paging rules every listing follows: scope, filters, totals and the requested page. */
@Injectable()
export class ListingPager {
  constructor(private readonly counts: CountCache) {}

  async paginate<TItem extends { id: number }>(
    repository: ListingRepository<TItem>,
    query: ListingQuery,
    principal: Principal,
  ): Promise<Page<TItem>> {
    const criteria = buildCriteria(repository.definition, query, principal);
    const offset = (query.page - 1) * query.limit;
    const total = await this.counts.get(criteriaKey(repository.definition.resource, criteria), () =>
      repository.count(criteria),
    );
    // A page past the end is answered without walking the index to its end.
    const items = offset < total ? await repository.findPage(criteria, offset, query.limit) : [];
    return new Page(items, query.page, query.limit, total);
  }
}
