import { ExecutionContext, HttpStatus, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { IS_PUBLIC, REQUIRED_SCOPES } from '../common/auth/auth.decorators';
import type { Principal } from '../common/auth/principal';
import { ProblemException } from '../common/problem-details/problem.exception';

export const REALM = 'api';

/**
 * The global guard: every route needs a valid bearer token with the route's scopes, unless it is
 * marked `@Public()`. Replies follow RFC 6750.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super({ session: false });
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const request = context.switchToHttp().getRequest<Request & { user?: Principal }>();
    // Only the Authorization header carries tokens: never the query string or a body.
    if (request.headers.authorization === undefined) {
      throw new ProblemException(HttpStatus.UNAUTHORIZED, 'This route needs a bearer token.', {
        headers: { 'WWW-Authenticate': `Bearer realm="${REALM}"` },
      });
    }
    await super.canActivate(context);

    const required = this.reflector.getAllAndOverride<string[]>(REQUIRED_SCOPES, targets) ?? [];
    const principal = request.user!;
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

  override handleRequest<TUser = Principal>(error: unknown, user: TUser | false): TUser {
    if (error) throw error;
    if (!user) {
      throw new ProblemException(
        HttpStatus.UNAUTHORIZED,
        'The bearer token is malformed, unknown, expired or revoked.',
        { headers: { 'WWW-Authenticate': `Bearer realm="${REALM}", error="invalid_token"` } },
      );
    }
    return user;
  }
}
