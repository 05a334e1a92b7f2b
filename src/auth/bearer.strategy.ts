import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-http-bearer';
import type { Principal } from '../common/auth/principal';
import { TokenAuthenticator } from './token-authenticator';

@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly authenticator: TokenAuthenticator) {
    super();
  }

  async validate(token: string): Promise<Principal | false> {
    return (await this.authenticator.authenticate(token)) ?? false;
  }
}
