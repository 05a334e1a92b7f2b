import { CanActivate, ExecutionContext, HttpStatus, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { IS_PUBLIC, REQUIRED_SCOPES } from '../common/auth/auth.decorators';
import type { Principal } from '../common/auth/principal';
import { ProblemException } from '../common/problem-details/problem.exception';
import { TokenAuthenticator } from './token-authenticator';
import { bearerCredentials } from './token-format';

export const REALM = 'api';

/**
 * The global guard: every route needs a valid bearer token with the route's scopes, unless it is
 * marked `@Public()`. Replies follow RFC 6750.
 *
 * It calls this app's TokenAuthenticator directly rather than through a passport strategy:
 * passport keeps strategies in one process-wide registry, so with two app instances in one
 * process (as the tests run them) the last one booted would authenticate for both.
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: TokenAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const request = context.switchToHttp().getRequest<Request & { user?: Principal }>();
    // Only the Authorization header carries tokens: never the query string or a body.
    const authorization = request.headers.authorization;
    if (authorization === undefined) {
      throw new ProblemException(HttpStatus.UNAUTHORIZED, 'This route needs a bearer token.', {
        headers: { 'WWW-Authenticate': `Bearer realm="${REALM}"` },
      });
    }
    const credentials = bearerCredentials(authorization);
    const principal =
      credentials === null ? null : await this.authenticator.authenticate(credentials);
    if (!principal) {
      throw new ProblemException(
        HttpStatus.UNAUTHORIZED,
        'The bearer token is malformed, unknown, expired or revoked.',
        { headers: { 'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"` } },
      );
    }
    request.user = principal;

    const required = this.reflector.getAllAndOverride<string[]>(REQUIRED_SCOPES, targets) ?? [];
    const missing = required.filter((scope) => !principal.scopes.has(scope));
    if (missing.length > 0) {
      throw new ProblemException(
        HttpStatus.FORBIDDEN,
        `This token lacks the scope this route needs: ${missing.join(' ')}.`,
        {
          headers: {
            'WWW-Authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${required.join(' ')}"`,
          },
        },
      );
    }
    return true;
  }
}
