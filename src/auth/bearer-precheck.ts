import { HttpStatus } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { sendProblem } from '../common/problem-details/problem-details.filter';
import type { DatabaseAvailability } from '../database/database-availability';
import { INVALID_TOKEN, MISSING_TOKEN } from './bearer-auth.guard';
import type { TokenAuthenticator } from './token-authenticator';
import { bearerCredentials } from './token-format';

/**
 * Refuses, ahead of Nest's pipeline, what the bearer guard would refuse without a look-up: no
 * Authorization header, one that carries no well-formed bearer token, or a token whose look-up,
 * still fresh in the authenticator's cache, found none (or a revoked or expired one). The reply
 * is the guard's own: the same 401 problem, status, headers and body. Everything else goes on to
 * the guard, which still refuses by default; so does every request while the database is not
 * connected yet (its 503 comes before token checks).
 *
 * A flood of garbage or stolen tokens is what meets this: mounted as Express route middleware on
 * the guarded routes' paths (`configureApp`), after the rate limit, it costs such a request no
 * routing into Nest, no passport and no exception (docs/decisions/bearer-precheck.md). Mounted on
 * the routes themselves, the request is still logged and counted under its route template.
 */
export function bearerPrecheck(
  authenticator: TokenAuthenticator,
  database: Pick<DatabaseAvailability, 'isUp'>,
): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    if (!database.isUp()) return next();
    const authorization = request.headers.authorization;
    if (authorization === undefined) {
      return sendProblem(request, response, HttpStatus.UNAUTHORIZED, MISSING_TOKEN.detail, {
        headers: MISSING_TOKEN.headers,
      });
    }
    const credentials = bearerCredentials(authorization);
    if (credentials === null || authenticator.refusesAtOnce(credentials)) {
      return sendProblem(request, response, HttpStatus.UNAUTHORIZED, INVALID_TOKEN.detail, {
        headers: INVALID_TOKEN.headers,
      });
    }
    next();
  };
}
