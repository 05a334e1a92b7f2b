import { Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { abandonedRequestsMiddleware } from './abandoned-requests';
import { DatabaseAvailability } from './database-availability';
import { DemoDataBootstrap } from './demo-data.bootstrap';
import { QueryKiller } from './query-killer';

/**
 * The database's life around the data source TypeORM provides: connecting it (at boot or later),
 * and stopping the statements of requests whose client has left.
 */
@Global()
@Module({
  providers: [DatabaseAvailability, DemoDataBootstrap, QueryKiller],
  exports: [DatabaseAvailability, QueryKiller],
})
export class DatabaseModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(abandonedRequestsMiddleware).forRoutes('{*path}');
  }
}
