import { Injectable, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { DataSource, EntitySubscriberInterface } from 'typeorm';
import type { AfterQueryEvent } from 'typeorm/subscriber/event/QueryEvent';
import { DatabaseAvailability } from '../database/database-availability';
import { DatabasePools, PoolSnapshot } from '../database/pool-usage';
import { ReadReplicas } from '../database/read-replicas';
import { OUT_OF_ROTATION_REASONS } from '../database/replica-status';
import { MetricsRegistry } from './metrics.registry';

type Target = 'primary' | 'replica';

/**
 * Query latency (a TypeORM subscriber of the primary's data source and each replica's: every
 * query of the app passes the broadcaster's AfterQuery event, with its execution time), the
 * connection pools' gauges (counted from the pools' public events, `PoolUsage`) and the read
 * replicas' place in the rotation and lag, read at scrape time.
 */
@Injectable()
export class DatabaseMetrics implements EntitySubscriberInterface, OnModuleInit {
  private readonly queries: Counter<'target' | 'outcome'>;
  private readonly duration: Histogram<'target'>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly availability: DatabaseAvailability,
    private readonly replicas: ReadReplicas,
    pools: DatabasePools,
    registry: MetricsRegistry,
  ) {
    this.queries = new Counter({
      name: 'db_queries_total',
      help: 'Database queries, by target (primary or replica) and outcome (ok or error).',
      labelNames: ['target', 'outcome'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'db_query_duration_seconds',
      help: 'Execution time of successful database queries, by target.',
      labelNames: ['target'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
    const gauge = (name: string, help: string, read: (pool: PoolSnapshot) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['pool'],
        registers: [registry],
        collect() {
          this.reset();
          for (const snapshot of pools.snapshots())
            this.set({ pool: snapshot.pool }, read(snapshot));
        },
      });
    gauge('db_pool_connections_open', 'Open connections of the pool.', (p) => p.open);
    gauge('db_pool_connections_idle', 'Open connections waiting for work.', (p) =>
      Math.max(0, p.open - p.inUse),
    );
    gauge(
      'db_pool_connections_in_use',
      'Connections handed out, not yet given back.',
      (p) => p.inUse,
    );
    gauge(
      'db_pool_acquire_waiting',
      'Queries waiting for a connection (a free one, or a new one connecting).',
      (p) => p.waiting,
    );
    gauge('db_pool_connections_max', 'Largest number of connections of the pool.', (p) => p.max);
    this.replicaGauges(registry);
  }

  private replicaGauges(registry: MetricsRegistry): void {
    const states = () => this.replicas.states();
    new Gauge({
      name: 'database_replica_in_rotation',
      help: 'Whether the read replica serves listing reads (1) or is out of the rotation (0).',
      labelNames: ['replica'],
      registers: [registry],
      collect() {
        this.reset();
        for (const state of states()) this.set({ replica: state.name }, state.inRotation ? 1 : 0);
      },
    });
    new Gauge({
      name: 'database_replica_out_of_rotation',
      help: `Why a read replica is out of the rotation: 1 for its reason (${OUT_OF_ROTATION_REASONS.join(', ')}), absent while it is in.`,
      labelNames: ['replica', 'reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const state of states()) {
          if (state.reason) this.set({ replica: state.name, reason: state.reason }, 1);
        }
      },
    });
    new Gauge({
      name: 'database_replica_lag_seconds',
      help: 'How far behind the primary the read replica was at its last check (SHOW REPLICA STATUS, whole seconds); absent when unknown.',
      labelNames: ['replica'],
      registers: [registry],
      collect() {
        this.reset();
        for (const state of states()) {
          if (state.lagSeconds !== null) this.set({ replica: state.name }, state.lagSeconds);
        }
      },
    });
  }

  /** Subscribes once each data source is initialized: initializing replaces its subscribers. */
  onModuleInit(): void {
    void this.availability.whenUp().then(() => {
      if (!this.dataSource.subscribers.includes(this)) this.dataSource.subscribers.push(this);
    });
    this.replicas.subscribe(this);
  }

  afterQuery(event: AfterQueryEvent): void {
    const onReplica = event.queryRunner && event.queryRunner.connection !== this.dataSource;
    const target: Target = onReplica ? 'replica' : 'primary';
    this.queries.inc({ target, outcome: event.success ? 'ok' : 'error' });
    if (event.success && event.executionTime !== undefined) {
      this.duration.observe({ target }, event.executionTime / 1000);
    }
  }
}
