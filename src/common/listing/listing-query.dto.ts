import { EnumParam, IdParam, IntegerParam } from '../validation/query-params';
import { ListingDefinition, sortKeys } from './listing-definition';

/** Bounds that come from configuration; set once at boot by `configurePagination`. */
export const paginationSettings = { defaultLimit: 20, maxLimit: 100 };

export function configurePagination(settings: { defaultLimit: number; maxLimit: number }): void {
  paginationSettings.defaultLimit = settings.defaultLimit;
  paginationSettings.maxLimit = settings.maxLimit;
}

/** The largest page number accepted: a signed 32-bit integer, as most clients store it. */
export const MAX_PAGE = 2 ** 31 - 1;

export class PaginationDto {
  @IntegerParam({ min: 1, max: MAX_PAGE, default: 1, description: 'Page number, from 1.' })
  page: number = 1;

  @IntegerParam({
    min: 1,
    max: () => paginationSettings.maxLimit,
    default: 20,
    description: 'Items per page.',
  })
  limit: number = paginationSettings.defaultLimit;
}

export interface ListingQuery extends PaginationDto {
  sort: string;
  after_id?: number;
  before_id?: number;
}

/**
 * The query DTO every listing shares: `page`, `limit`, `sort` (by `id` or one of the sortable
 * columns) and the keyset bounds. A module's DTO extends it with its filters (`@Filter`).
 */
export function ListingQueryDto(options: Pick<ListingDefinition, 'sortableColumns'>) {
  const keys = sortKeys(options);
  class ListingQueryDtoClass extends PaginationDto implements ListingQuery {
    static readonly sortableColumns = options.sortableColumns;

    @EnumParam(
      keys,
      'Sort order: a field name, `-` in front for descending. Ties break on `id` in the same direction. Default `id`.',
    )
    sort: string = 'id';

    @IdParam(
      'Keyset walk: only records with `id` greater than this. Needs `sort=id` (the default).',
    )
    after_id?: number;

    @IdParam('Keyset walk backwards: only records with `id` less than this. Needs `sort=-id`.')
    before_id?: number;
  }
  return ListingQueryDtoClass;
}
