import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import type { Principal } from '../common/auth/principal';
import type { TokenAuthenticator } from './token-authenticator';

/** Where the guard hands this app's authenticator to the strategy, per request. */
export const TOKEN_AUTHENTICATOR = Symbol('tokenAuthenticator');

export type AuthenticatingRequest = Request & { [TOKEN_AUTHENTICATOR]?: TokenAuthenticator };

/**
 * passport-http-bearer, registered under the name `bearer`. Passport keeps strategies in one
 * process-wide registry, so the strategy holds no state of its own: it uses the authenticator that
 * the guard of the app serving the request put on it (two apps in one process, as the tests run
 * them, each check tokens against their own database).
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor() {
    super({ passReqToCallback: true });
  }

  async validate(request: AuthenticatingRequest, token: string): Promise<Principal | false> {
    const authenticator = request[TOKEN_AUTHENTICATOR];
    if (!authenticator) return false;
    return (await authenticator.authenticateFor(request, token)) ?? false;
  }
}
