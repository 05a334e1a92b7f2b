import { Module } from '@nestjs/common';
import { RateLimits } from './rate-limits';

/** Rate-limit counters; the middleware that spends them is wired in `configureApp`. */
@Module({
  providers: [RateLimits],
  exports: [RateLimits],
})
export class RateLimitModule {}
