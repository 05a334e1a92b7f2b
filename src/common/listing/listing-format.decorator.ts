import { createParamDecorator, ExecutionContext, HttpStatus } from '@nestjs/common';
import type { Request } from 'express';
import Negotiator from 'negotiator';
import { ProblemException } from '../problem-details/problem.exception';

export const NDJSON = 'application/x-ndjson';

export type ListingFormat = 'json' | 'ndjson';

/**
 * The representation the client's Accept header asks for: the JSON page, or every matching row
 * as NDJSON. A parameter rather than middleware, so that it is negotiated after the bearer guard
 * (an unauthenticated request gets its 401 whatever it accepts).
 */
export const ListingFormat = createParamDecorator(
  (_: unknown, context: ExecutionContext): ListingFormat => {
    const request = context.switchToHttp().getRequest<Request>();
    const format = acceptedFormat(request.headers.accept);
    if (!format) {
      throw new ProblemException(
        HttpStatus.NOT_ACCEPTABLE,
        `This route answers application/json or ${NDJSON}; the Accept header allows neither.`,
      );
    }
    return format;
  },
);

/**
 * The format an Accept header prefers, if it accepts one. A media type's parameters
 * (`application/json; charset=utf-8`) do not narrow what a listing answers; only `q` weighs.
 */
export function acceptedFormat(accept: string | undefined): ListingFormat | undefined {
  const types = accept?.replace(/;\s*(?!q\s*=)[^;,]*/gi, '');
  const type = new Negotiator({ headers: { accept: types } }).mediaType([
    'application/json',
    NDJSON,
  ]);
  return type === undefined ? undefined : type === NDJSON ? 'ndjson' : 'json';
}
