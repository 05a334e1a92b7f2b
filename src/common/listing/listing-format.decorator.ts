import { createParamDecorator, ExecutionContext, HttpStatus } from '@nestjs/common';
import type { Request } from 'express';
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
    const type = request.accepts(['application/json', NDJSON, 'application/problem+json']);
    if (!type) {
      throw new ProblemException(
        HttpStatus.NOT_ACCEPTABLE,
        `This route answers application/json or ${NDJSON}; the Accept header allows neither.`,
      );
    }
    return type === NDJSON ? 'ndjson' : 'json';
  },
);
