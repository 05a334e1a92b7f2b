import { applyDecorators, Type } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiResponse,
} from '@nestjs/swagger';
import { ProblemView } from '../problem-details/problem.view';

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

const problem = (status: number, description: string, headers?: Record<string, object>) =>
  ApiResponse({
    status,
    description,
    content: {
      'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemView' } },
    },
    headers,
  });

/** The error replies every authenticated listing can give. */
export const ApiListingProblems = () =>
  applyDecorators(
    ApiExtraModels(ProblemView),
    problem(400, 'A query parameter is invalid; `errors` names each one.'),
    problem(401, 'The bearer token is missing, malformed, unknown, expired or revoked.', {
      'WWW-Authenticate': { schema: { type: 'string' }, description: 'RFC 6750 challenge.' },
    }),
    problem(403, 'The token lacks the scope this route needs.', {
      'WWW-Authenticate': {
        schema: { type: 'string' },
        description: 'RFC 6750 challenge with error="insufficient_scope".',
      },
    }),
    problem(406, 'The client accepts no JSON.'),
    problem(429, 'The token exceeded its rate limit.', {
      'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' },
    }),
    problem(503, 'The database is unavailable or too slow; retry later.', {
      'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' },
    }),
  );

/**
 * Documents a listing route: a named envelope schema (`<envelopeName>`) holding `itemType`, the
 * listing headers and every error reply.
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
          schema: { type: 'integer' },
          description: 'Records matching the filters (may be a few seconds old).',
        },
        Link: { schema: { type: 'string' }, description: 'RFC 8288 first/prev/next/last links.' },
        ETag: {
          schema: { type: 'string' },
          description:
            'Strong tag of the page and its total; send it back as If-None-Match for a 304.',
        },
        'Cache-Control': {
          schema: { type: 'string', example: 'private, no-cache' },
          description: 'Per-user, revalidate every time (with If-None-Match).',
        },
      },
    }),
    ApiResponse({
      status: 304,
      description:
        'Not modified: If-None-Match holds the current ETag (also in a list, or as W/…). No body.',
    }),
    ApiListingProblems(),
  );
}
