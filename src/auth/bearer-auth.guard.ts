import { ExecutionContext, HttpStatus, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { IS_PUBLIC, REQUIRED_SCOPES } from '../common/auth/auth.decorators';
import type { Principal } from '../common/auth/principal';
import { ProblemException } from '../common/problem-details/problem.exception';
import { AuthenticatingRequest, TOKEN_AUTHENTICATOR } from './bearer.strategy';
import { TokenAuthenticator } from './token-authenticator';
import { bearerCredentials } from './token-format';

export const REALM = 'api';

/** The 401 replies (RFC 6750 §3): no token at all, or one that is not valid. */
export const MISSING_TOKEN = {
  detail: 'This route needs a bearer token.',
  headers: { 'WWW-Authenticate': `Bearer realm="${REALM}"` },
} as const;
export const INVALID_TOKEN = {
  detail: 'The bearer token is malformed, unknown, expired or revoked.',
  headers: { 'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"` },
} as const;

const invalidToken = () =>
  new ProblemException(HttpStatus.UNAUTHORIZED, INVALID_TOKEN.detail, {
    headers: { ...INVALID_TOKEN.headers },
  });

/**
 * The global guard, built on @nestjs/passport with passport-http-bearer: every route needs a
 * valid bearer token with the route's scopes, unless it is marked `@Public()`. Replies follow
 * RFC 6750. Only the Authorization header carries tokens (passport-http-bearer would also take
 * `access_token` from the query string, which ends up in logs and proxies): a request without a
 * well-formed `Bearer <credentials>` header is refused before the strategy runs.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: TokenAuthenticator,
  ) {
    super({ session: false });
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const request = context
      .switchToHttp()
      .getRequest<AuthenticatingRequest & { user?: Principal }>();
    const authorization = request.headers.authorization;
    if (authorization === undefined) {
      throw new ProblemException(HttpStatus.UNAUTHORIZED, MISSING_TOKEN.detail, {
        headers: { ...MISSING_TOKEN.headers },
      });
    }
    const credentials = bearerCredentials(authorization);
    if (credentials === null) throw invalidToken();
    // With one space, as passport-http-bearer reads it: it refuses more (400), which RFC 9110 allows.
    request.headers.authorization = `Bearer ${credentials}`;

    request[TOKEN_AUTHENTICATOR] = this.authenticator;
    await super.canActivate(context);
    const principal = request.user!;

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

  override handleRequest<TUser = Principal>(
    error: unknown,
    user: TUser | false,
    _info: unknown,
    _context: ExecutionContext,
    status?: unknown,
  ): TUser {
    if (error) throw error;
    // passport-http-bearer fails with 400 when `access_token` comes too: a parameter, not a token.
    if (status === HttpStatus.BAD_REQUEST) {
      throw ProblemException.badRequest([
        {
          parameter: 'access_token',
          message: 'is not a known parameter: a token goes in the Authorization header only',
        },
      ]);
    }
    if (!user) throw invalidToken();
    return user;
  }
}
