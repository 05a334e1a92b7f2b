import { applyDecorators, Type } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';

export class PaginationView {
  @ApiProperty({ type: 'integer', minimum: 1, example: 2 })
  current_page: number;

  @ApiProperty({ type: 'integer', minimum: 1, example: 20 })
  limit: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 7,
    description: 'Total pages for the filters: ceil(total / limit); 0 when nothing matches.',
  })
  page_count: number;
}

/**
 * Documents a listing route: a named envelope schema (`<envelopeName>`) holding `itemType` and the
 * listing headers. The error replies, X-Request-Id and rate-limit headers every `/v1` route shares
 * are added to the document centrally (src/openapi/openapi-document.ts).
 */
export function ApiListing(
  itemType: Type<unknown>,
  options: { summary: string; envelopeName: string },
): MethodDecorator {
  class Envelope {
    data: unknown[];
    pagination: PaginationView;
  }
  Object.defineProperty(Envelope, 'name', { value: options.envelopeName });
  ApiProperty({ type: [itemType] })(Envelope.prototype, 'data');
  ApiProperty({ type: PaginationView })(Envelope.prototype, 'pagination');

  return applyDecorators(
    ApiOperation({ summary: options.summary }),
    ApiExtraModels(Envelope, PaginationView, itemType),
    ApiOkResponse({
      description:
        'One page of the listing (`application/json`), or with `Accept: application/x-ndjson` every matching row, one item per line (`page` refused, `limit` caps the rows, same filters, sort and scope). An export spends one request of rate-limit budget per EXPORT_ROWS_PER_REQUEST rows, and pauses until the next window once it is spent; a stream that fails midway ends without its final chunk (a truncated transfer).',
      content: {
        'application/json': { schema: { $ref: getSchemaPath(Envelope) } },
        // Each line is one item, exactly as in `data` of a page.
        'application/x-ndjson': { schema: { $ref: getSchemaPath(itemType) } },
      },
      headers: {
        'X-Total-Count': {
          schema: { type: 'integer', minimum: 0 },
          description:
            'JSON pages: records matching the filters and the token scope. May be a few seconds old: totals are reused briefly and advanced by the rows appended since (COUNT_CACHE_TTL_MS).',
        },
        Link: {
          schema: { type: 'string' },
          description:
            'JSON pages: RFC 8288 links keeping the other parameters. `first`, `prev` and `last` are page numbers; `next` carries an opaque `cursor` (a keyset step: constant cost at any depth; follow it as given). On an ascending walk in id order, or in the order rows change (by the timestamp every change of a row sets, where the listing has one: `sort=updated_at` on users), the last page, even an empty one, has `next`: following it later returns the rows appended or changed since (tail polling; rows written, or in id order first seen, within TAIL_HOLDBACK_MS are held back), until a window closing on that order (its `…_to` parameter) has closed.',
        },
        ETag: {
          schema: { type: 'string' },
          description:
            'JSON pages: weak tag of the page and its total, the same for every content coding; send it back as `If-None-Match` to get a 304 when nothing changed.',
        },
        'Cache-Control': {
          required: true,
          schema: { type: 'string', enum: ['private, no-cache', 'private, no-store'] },
          description:
            'Pages: `private, no-cache` (revalidate with If-None-Match); exports: `private, no-store`.',
        },
      },
    }),
    ApiResponse({
      status: 304,
      description:
        'Not modified: `If-None-Match` holds the current ETag (also in a list, or `*`), whatever Cache-Control the request carries. No body; spends no rate-limit budget (the request is given back, up to as many 304s a minute as the budget holds; `RateLimit` says so).',
      headers: {
        ETag: { required: true, schema: { type: 'string' }, description: 'The current ETag.' },
      },
    }),
  );
}
