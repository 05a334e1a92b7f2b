import type { Params } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import type { Options } from 'pino-http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppConfig } from '../config/app-config';
import type { Principal } from '../common/auth/principal';

type RequestWithUser = IncomingMessage & { user?: Principal; route?: { path?: string } };

/**
 * One JSON line per request: id, method, route template, status, duration and the token's id.
 * Headers are not logged at all, so a bearer token can never reach a log line.
 *
 * `destination` replaces stdout (the test kit passes one to read the real log lines back);
 * pretty printing is a transport, which pino cannot combine with a destination, so it is off then.
 */
export function buildLoggerOptions(config: AppConfig, destination?: DestinationStream): Params {
  const options: Options = {
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
        path: request.url.split('?')[0],
      }),
      res: (response: { statusCode: number }) => ({ status: response.statusCode }),
    },
    customSuccessMessage: (request: IncomingMessage, response: ServerResponse) =>
      `${request.method} ${response.statusCode}`,
    customErrorMessage: (request: IncomingMessage, response: ServerResponse) =>
      `${request.method} ${response.statusCode}`,
    transport:
      config.log.pretty && !destination
        ? { target: 'pino-pretty', options: { singleLine: true } }
        : undefined,
  };
  return { pinoHttp: destination ? [options, destination] : options };
}
