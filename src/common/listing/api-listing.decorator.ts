import { applyDecorators, Type } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiResponse,
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
    ApiExtraModels(Envelope, PaginationView),
    ApiOkResponse({
      type: Envelope,
      description: 'One page of the listing.',
      headers: {
        'X-Total-Count': {
          required: true,
          schema: { type: 'integer', minimum: 0 },
          description:
            'Records matching the filters and the token scope. May be a few seconds old: totals are reused briefly (COUNT_CACHE_TTL_MS).',
        },
        Link: {
          schema: { type: 'string' },
          description:
            'RFC 8288 links to the `first`, `prev`, `next` and `last` pages that exist, keeping the other parameters. Absent when nothing matches.',
        },
        ETag: {
          required: true,
          schema: { type: 'string' },
          description:
            'Strong tag of the page and its total; send it back as `If-None-Match` to get a 304 when nothing changed.',
        },
        'Cache-Control': {
          required: true,
          schema: { type: 'string', enum: ['private, no-cache'] },
          description:
            'Per-token replies: cache privately, revalidate every time (with If-None-Match).',
        },
      },
    }),
    ApiResponse({
      status: 304,
      description:
        'Not modified: `If-None-Match` holds the current ETag (also in a list, or as W/…). No body.',
      headers: {
        ETag: { required: true, schema: { type: 'string' }, description: 'The current ETag.' },
      },
    }),
  );
}
