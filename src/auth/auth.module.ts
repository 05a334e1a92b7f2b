import { Module } from '@nestjs/common';
import { ApiTokensRepository } from './api-tokens.repository';
import { TokenAuthenticator } from './token-authenticator';

@Module({
  providers: [ApiTokensRepository, TokenAuthenticator],
  exports: [TokenAuthenticator, ApiTokensRepository],
})
export class AuthModule {}
