import { Global, Module } from '@nestjs/common';
import { SharedRedis } from './shared-redis';

@Global()
@Module({
  providers: [SharedRedis],
  exports: [SharedRedis],
})
export class RedisModule {}
