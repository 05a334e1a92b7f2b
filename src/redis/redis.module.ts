import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { SHARED_TOTALS } from '../common/listing/shared-totals';
import { RedisSharedTotals } from './redis-shared-totals';
import { SharedRedis } from './shared-redis';

@Global()
@Module({
  providers: [
    SharedRedis,
    {
      provide: SHARED_TOTALS,
      // Only with a count cache to share: with COUNT_CACHE_TTL_MS=0 totals are not kept at all.
      useFactory: (config: AppConfig, redis: SharedRedis) =>
        config.redisUrl && config.countCacheTtlMs > 0 ? new RedisSharedTotals(redis) : null,
      inject: [APP_CONFIG, SharedRedis],
    },
  ],
  exports: [SharedRedis, SHARED_TOTALS],
})
export class RedisModule {}
