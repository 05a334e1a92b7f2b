import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE, DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DestinationStream } from 'pino';
import { AuthModule } from './auth/auth.module';
import { InFlightRequests } from './common/http/in-flight-requests';
import { BearerAuthGuard } from './auth/bearer-auth.guard';
import { ListingModule } from './common/listing/listing.module';
import { PageEnvelopeInterceptor } from './common/listing/page-envelope.interceptor';
import { ProblemDetailsFilter } from './common/problem-details/problem-details.filter';
import { QueryValidationPipe } from './common/validation/query-validation.pipe';
import type { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { buildAppDataSourceOptions } from './database/app-data-source-options';
import { DatabaseAvailableGuard } from './database/database-available.guard';
import { DatabaseModule } from './database/database.module';
import { DatabasePools } from './database/pool-usage';
import { HealthModule } from './health/health.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { LoginActivitiesModule } from './login-activities/login-activities.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { RedisModule } from './redis/redis.module';
import { UsersModule } from './users/users.module';
import { RequestDeadlineInterceptor } from './database/request-deadline.interceptor';

/**
 * The application, built from a validated configuration. Cross-cutting pieces are registered
 * here, once: the database and bearer guards, the query validation pipe, the request deadline and
 * envelope interceptors, and the problem-details filter.
 */
export interface AppModuleOptions {
  /** Where log lines go instead of stdout (the test kit reads them back from here). */
  logDestination?: DestinationStream;
}

@Module({})
export class AppModule {
  static forRoot(
    config: AppConfig,
    extraModules: DynamicModule['imports'] = [],
    options: AppModuleOptions = {},
  ): DynamicModule {
    const pools = new DatabasePools();
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(config, options.logDestination),
        TypeOrmModule.forRoot({
          ...buildAppDataSourceOptions(config, pools.usage('primary')),
          // Connected by DatabaseAvailability: boot must not wait for a database that is down.
          manualInitialization: true,
        }),
        DatabaseModule.forRoot(pools),
        DiscoveryModule,
        RedisModule,
        ListingModule,
        RateLimitModule,
        AuthModule,
        HealthModule,
        MetricsModule.forRoot(config),
        UsersModule,
        LoginActivitiesModule,
        ...extraModules,
      ],
      providers: [
        InFlightRequests,
        // In this order: a 503 while the database is not connected yet comes before token checks.
        { provide: APP_GUARD, useClass: DatabaseAvailableGuard },
        { provide: APP_GUARD, useClass: BearerAuthGuard },
        { provide: APP_PIPE, useClass: QueryValidationPipe },
        { provide: APP_INTERCEPTOR, useClass: RequestDeadlineInterceptor },
        { provide: APP_INTERCEPTOR, useClass: PageEnvelopeInterceptor },
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
      ],
    };
  }
}
