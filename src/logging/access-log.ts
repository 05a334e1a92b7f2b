import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import type { Logger } from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';
import type { Principal } from '../common/auth/principal';
import { redactTokens } from '../common/auth/token-redaction';
import { pathAndQuery } from '../common/http/request-target';
import { routeTemplate } from './logger-options';

/** The path without its query string, with any token pasted into it blanked out. */
function loggedPath(request: IncomingMessage): string {
  const url = pathAndQuery((request as Request).originalUrl ?? request.url ?? '');
  const query = url.indexOf('?');
  return redactTokens(query < 0 ? url : url.slice(0, query));
}

/**
 * pino-http, set to write one line per request when its response ends: id, method, path, route
 * template, status, duration (`responseTime`, ms), the token's id, and `aborted` when the client left
 * before the reply was sent. Headers and the query string
 * are never logged, so a bearer token cannot reach a log line. 5xx replies are logged at `error`
 * (their cause, with its stack, is logged by the problem-details filter), the rest at `info`.
 */
export function accessLog(logger: Logger): HttpLogger {
  // What is known only once the request was routed and authenticated, added as it ends.
  const outcome = (request: IncomingMessage, values: Record<string, unknown>) => ({
    route: routeTemplate(request),
    token_id: ((request as Request).user as Principal | undefined)?.tokenId,
    ...values,
  });
  return pinoHttp({
    logger,
    // The request id middleware runs first and has set `request.id`.
    genReqId: (request) => request.id,
    // Our serializers read the raw objects: no per-request copy of pino's standard views.
    wrapSerializers: false,
    serializers: {
      req: (request: IncomingMessage) => ({
        id: request.id,
        method: request.method,
        path: loggedPath(request),
      }),
      res: (response: ServerResponse) => ({ status: response.statusCode }),
    },
    customSuccessObject: (request, response, values: Record<string, unknown>) =>
      // A reply that never finished: the client left first.
      outcome(request, response.writableFinished ? values : { ...values, aborted: true }),
    // No `err` of pino-http's own for a 5xx: the problem-details filter logs the real cause.
    customErrorObject: (request, _response, _error, values: Record<string, unknown>) =>
      outcome(request, { res: values.res, responseTime: values.responseTime }),
    customLogLevel: (_request, response, error) =>
      error || response.statusCode >= 500 ? 'error' : 'info',
    customSuccessMessage: (request, response) => `${request.method} ${response.statusCode}`,
    customErrorMessage: (request, response) => `${request.method} ${response.statusCode}`,
  });
}
