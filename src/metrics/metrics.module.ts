import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config/app-config';
import { DatabaseMetrics } from './database-metrics';
import { HttpMetrics } from './http-metrics';
import { ListingMetrics } from './listing-metrics';
import { MetricsController } from './metrics.controller';
import { MetricsRegistry } from './metrics.registry';

/** Prometheus metrics at /metrics; with METRICS_ENABLED=false nothing is collected or served. */
@Module({})
export class MetricsModule {
  static forRoot(config: AppConfig): DynamicModule {
    if (!config.metrics.enabled) return { module: MetricsModule };
    return {
      module: MetricsModule,
      providers: [MetricsRegistry, HttpMetrics, DatabaseMetrics, ListingMetrics],
      controllers: [MetricsController],
      exports: [HttpMetrics],
    };
  }
}
