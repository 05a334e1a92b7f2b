import { ValidateBy } from 'class-validator';
import { PAGE_LIMIT_CEILING } from '../../config/app-config';
import { EnumParam, IdParam, IntegerParam, StringParam } from '../validation/query-params';
import { ListingDefinition, sortKeys } from './listing-definition';

export const SORT_DESCRIPTION =
  'Sort order: a field name, `-` in front for descending. Ties break on `id` in the same direction. Default `id`.';

/** The largest page number accepted: a signed 32-bit integer, as most clients store it. */
export const MAX_PAGE = 2 ** 31 - 1;

/** `page` and `limit` stay undefined when not given: a cursor or an export must know. */
export class PaginationDto {
  @IntegerParam({ min: 1, max: MAX_PAGE, default: 1, description: 'Page number, from 1.' })
  @ValidateBy({
    name: 'pageWithoutCursor',
    validator: {
      validate: (_page, args) => (args?.object as ListingQuery).cursor === undefined,
      defaultMessage: () => 'cannot be combined with cursor, which stands for its page',
    },
  })
  page?: number;

  // The app's own PAGE_LIMIT_MAX is checked by QueryValidationPipe: apps in one process may differ.
  @IntegerParam({ min: 1, max: PAGE_LIMIT_CEILING, default: 20, description: 'Items per page.' })
  limit?: number;
}

export interface ListingQuery extends PaginationDto {
  sort: string;
  after_id?: number;
  before_id?: number;
  cursor?: string;
}

/**
 * The query DTO every listing shares: `page`, `limit`, `sort` (by `id` or one of the sortable
 * columns) and the keyset bounds. A module's DTO extends it with its filters (`@Filter`).
 */
export function ListingQueryDto(options: Pick<ListingDefinition, 'sortableColumns'>) {
  const keys = sortKeys(options);
  class ListingQueryDtoClass extends PaginationDto implements ListingQuery {
    static readonly sortableColumns = options.sortableColumns;

    @EnumParam(keys, SORT_DESCRIPTION)
    sort: string = 'id';

    @IntegerParam({
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
      description:
        'Only records with `id` greater than this: with the default `sort=id`, a keyset walk (`0`: from the start).',
    })
    after_id?: number;

    @IdParam('Only records with `id` less than this: with `sort=-id`, a keyset walk backwards.')
    before_id?: number;

    // Room for any sort value a cursor carries: 255 characters of a name, each escaped or 4 bytes.
    @StringParam({
      maxLength: 4096,
      pattern: /^[\w-]+\.[\w-]+$/,
      patternMessage: 'is not a cursor: use the `next` link as given',
      description:
        'Opaque continuation from `Link: rel="next"`: follow that link as given. Bound to the filters and sort it was made for, and to the organization of its token; not combinable with `page`.',
    })
    cursor?: string;
  }
  return ListingQueryDtoClass;
}
