import { Module } from '@nestjs/common';
import { EXPORT_BUDGET } from '../common/listing/export-budget';
import { RateLimitedExports } from './rate-limited-exports';
import { RateLimits } from './rate-limits';

/**
 * Rate-limit counters and the exports' pace; the middleware that spends the counters is wired in
 * `configureApp`.
 */
@Module({
  providers: [RateLimits, { provide: EXPORT_BUDGET, useClass: RateLimitedExports }],
  exports: [RateLimits, EXPORT_BUDGET],
})
export class RateLimitModule {}
