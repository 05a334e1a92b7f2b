import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../common/auth/principal';
import { redactTokens } from '../common/auth/token-redaction';
import { routeTemplate } from './logger-options';

/**
 * One JSON line per request, written when its response ends: id, method, path, route template,
 * status, duration (`responseTime`, ms) and the token's id; `aborted` when the client left before
 * the reply was sent. Headers are not logged at all, so a bearer token can never reach a log line,
 * and the path is logged without its query string. 5xx replies are logged at `error` (their cause,
 * with its stack, is logged by the problem-details filter), the rest at `info`.
 *
 * Hand-written rather than pino-http: that builds two child loggers per request (serializing the
 * request for each) and its line's fields even when the level drops the line; this costs one
 * listener until the line is due.
 */
export function accessLogMiddleware(logger: Logger) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const started = performance.now();
    // 'close' ends every response exactly once, also when the client left first.
    response.on('close', () => {
      const level = response.statusCode >= 500 ? 'error' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const path = request.originalUrl;
      const query = path.indexOf('?');
      logger[level](
        {
          req: {
            id: request.id,
            method: request.method,
            // The query string is never logged; a token pasted into the path is blanked out.
            path: redactTokens(query < 0 ? path : path.slice(0, query)),
          },
          res: { status: response.statusCode },
          responseTime: Math.round(performance.now() - started),
          route: routeTemplate(request),
          token_id: (request.user as Principal | undefined)?.tokenId,
          aborted: response.writableFinished ? undefined : true,
        },
        `${request.method} ${response.statusCode}`,
      );
    });
    next();
  };
}
