import type { Params } from 'nestjs-pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppConfig } from '../config/app-config';
import type { Principal } from '../common/auth/principal';
import { redactTokens } from '../common/auth/token-redaction';

type RequestWithUser = IncomingMessage & { user?: Principal; route?: { path?: string } };

/**
 * One JSON line per request: id, method, route template, status, duration and the token's id.
 * Headers are not logged at all, so a bearer token can never reach a log line.
 */
export function buildLoggerOptions(config: AppConfig): Params {
  return {
    pinoHttp: {
      level: config.log.level,
      genReqId: (request) => request.id,
      customProps: (request: RequestWithUser) => ({
        route: request.route?.path,
        token_id: request.user?.tokenId,
      }),
      serializers: {
        req: (request: { id: string; method: string; url: string }) => ({
          id: request.id,
          method: request.method,
          // The query string is never logged; a token pasted into the path is blanked out.
          path: redactTokens(request.url.split('?')[0]),
        }),
        res: (response: { statusCode: number }) => ({ status: response.statusCode }),
      },
      customSuccessMessage: (request: IncomingMessage, response: ServerResponse) =>
        `${request.method} ${response.statusCode}`,
      customErrorMessage: (request: IncomingMessage, response: ServerResponse) =>
        `${request.method} ${response.statusCode}`,
      transport: config.log.pretty
        ? { target: 'pino-pretty', options: { singleLine: true } }
        : undefined,
    },
  };
}
