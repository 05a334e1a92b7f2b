import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { ApiTokensRepository } from './api-tokens.repository';
import { BearerStrategy } from './bearer.strategy';
import { TokenAuthenticator } from './token-authenticator';

@Module({
  imports: [PassportModule],
  providers: [ApiTokensRepository, TokenAuthenticator, BearerStrategy],
  exports: [TokenAuthenticator, ApiTokensRepository],
})
export class AuthModule {}
