import { DynamicModule, Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { abandonedRequestsMiddleware } from './abandoned-requests';
import { DatabaseAvailability } from './database-availability';
import { DemoDataBootstrap } from './demo-data.bootstrap';
import { DatabasePools } from './pool-usage';
import { QueryKiller } from './query-killer';
import { ReadReplicas } from './read-replicas';
import { StatementRunners } from './statement-runner';

/**
 * The database's life around the data source TypeORM provides: connecting it (at boot or later),
 * the read replicas and which of them serve reads, the pools' usage, running reads' statements
 * under their time limits, and stopping the statements of requests whose client has left.
 */
@Global()
@Module({})
export class DatabaseModule implements NestModule {
  /** `pools`: the usage of the pools, the primary's counted from the options TypeORM was given. */
  static forRoot(pools: DatabasePools): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        DatabaseAvailability,
        DemoDataBootstrap,
        QueryKiller,
        ReadReplicas,
        StatementRunners,
        { provide: DatabasePools, useValue: pools },
      ],
      exports: [DatabaseAvailability, QueryKiller, ReadReplicas, StatementRunners, DatabasePools],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(abandonedRequestsMiddleware).forRoutes('{*path}');
  }
}
