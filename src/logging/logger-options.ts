import type { LevelWithSilent } from 'pino';
import type { Options } from 'pino-http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppConfig } from '../config/app-config';
import type { Principal } from '../common/auth/principal';
import { redactTokens } from '../common/auth/token-redaction';

type RequestWithUser = IncomingMessage & { user?: Principal; route?: { path?: string } };

/**
 * The route template that served the request (`/v1/users`), never the raw URL. Middleware bound
 * to every path (the logger's own) shows up as a `{*path}` wildcard: that is no route of ours,
 * so requests nothing matched (404, 405) carry no route.
 */
export function routeTemplate(request: IncomingMessage): string | undefined {
  const path = (request as RequestWithUser).route?.path;
  return typeof path === 'string' && !path.includes('{*') ? path : undefined;
}

/**
 * Written when the response has finished (pino-http's `customProps` would also run when the
 * request starts, before routing and authentication, and bind a second, stale `route` key).
 */
function requestFields(request: IncomingMessage) {
  return { route: routeTemplate(request), token_id: (request as RequestWithUser).user?.tokenId };
}

function levelFor(_request: IncomingMessage, response: ServerResponse): LevelWithSilent {
  return response.statusCode >= 500 ? 'error' : 'info';
}

/**
 * One JSON line per request: id, method, route template, status, duration (`responseTime`, ms)
 * and the token's id. Headers are not logged at all, so a bearer token can never reach a log line;
 * the path is logged without its query string.
 *
 * `withDestination`: pretty printing is a transport, which pino cannot combine with a
 * destination stream (the test kit's capture), so it is off then.
 */
export function buildHttpLoggerOptions(config: AppConfig, withDestination = false): Options {
  return {
    level: config.log.level,
    genReqId: (request) => request.id,
    customLogLevel: levelFor,
    serializers: {
      req: (request: { id: string; method: string; url: string }) => ({
        id: request.id,
        method: request.method,
        // The query string is never logged; a token pasted into the path is blanked out.
        path: redactTokens(request.url.split('?')[0]),
      }),
      res: (response: { statusCode: number }) => ({ status: response.statusCode }),
    },
    customSuccessObject: (request, _response, fields: Record<string, unknown>) => ({
      ...fields,
      ...requestFields(request),
    }),
    // A 5xx's cause is logged, with its stack, by the problem-details filter; pino-http's own
    // `err` here would only be a made-up "failed with status code" error.
    customErrorObject: (request, _response, _error, fields: Record<string, unknown>) => {
      const { err: _ignored, ...rest } = fields;
      return { ...rest, ...requestFields(request) };
    },
    customSuccessMessage: (request, response) => `${request.method} ${response.statusCode}`,
    customErrorMessage: (request, response) => `${request.method} ${response.statusCode}`,
    transport:
      config.log.pretty && !withDestination
        ? { target: 'pino-pretty', options: { singleLine: true } }
        : undefined,
  };
}
