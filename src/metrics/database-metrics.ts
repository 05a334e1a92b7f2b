import { Injectable, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { DataSource, EntitySubscriberInterface } from 'typeorm';
import type { AfterQueryEvent } from 'typeorm/subscriber/event/QueryEvent';
import { DatabaseAvailability } from '../database/database-availability';
import { MetricsRegistry } from './metrics.registry';

type Target = 'primary' | 'replica';

/** What a mysql2 pool exposes about itself (internal fields, read-only here). */
interface Mysql2Pool {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
  config?: { connectionLimit?: number };
}

interface PoolSnapshot {
  pool: string;
  open: number;
  idle: number;
  waiting: number;
  max: number;
}

/**
 * Query latency (a TypeORM subscriber: every query of the app passes the broadcaster's
 * AfterQuery event, with its execution time and whether it ran on the primary or a replica)
 * and connection-pool gauges read from the mysql2 pools at scrape time.
 */
@Injectable()
export class DatabaseMetrics implements EntitySubscriberInterface, OnModuleInit {
  private readonly queries: Counter<'target' | 'outcome'>;
  private readonly duration: Histogram<'target'>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly availability: DatabaseAvailability,
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
    const pools = () => this.pools();
    const gauge = (name: string, help: string, read: (pool: PoolSnapshot) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['pool'],
        registers: [registry],
        collect() {
          this.reset();
          for (const snapshot of pools()) this.set({ pool: snapshot.pool }, read(snapshot));
        },
      });
    gauge('db_pool_connections_open', 'Open connections of the pool.', (p) => p.open);
    gauge('db_pool_connections_idle', 'Open connections waiting for work.', (p) => p.idle);
    gauge('db_pool_connections_in_use', 'Connections running a query.', (p) => p.open - p.idle);
    gauge('db_pool_acquire_waiting', 'Queries waiting for a free connection.', (p) => p.waiting);
    gauge('db_pool_connections_max', 'Largest number of connections of the pool.', (p) => p.max);
  }

  /** Subscribes once the data source is initialized: initializing replaces its subscribers. */
  onModuleInit(): void {
    void this.availability.whenUp().then(() => {
      if (!this.dataSource.subscribers.includes(this)) this.dataSource.subscribers.push(this);
    });
  }

  afterQuery(event: AfterQueryEvent): void {
    const target: Target =
      event.queryRunner?.getReplicationMode?.() === 'slave' ? 'replica' : 'primary';
    this.queries.inc({ target, outcome: event.success ? 'ok' : 'error' });
    if (event.success && event.executionTime !== undefined) {
      this.duration.observe({ target }, event.executionTime / 1000);
    }
  }

  /** The mysql2 pools: `primary`, or `primary` and `replica0..n` with replicas; none on SQLite. */
  private pools(): PoolSnapshot[] {
    const driver = this.dataSource.driver as {
      pool?: Mysql2Pool;
      poolCluster?: { _nodes?: Record<string, { pool: Mysql2Pool }> };
    };
    const named: [string, Mysql2Pool][] = [];
    if (driver.pool) named.push(['primary', driver.pool]);
    for (const [id, node] of Object.entries(driver.poolCluster?._nodes ?? {})) {
      named.push([id === 'MASTER' ? 'primary' : id.replace(/^SLAVE/, 'replica'), node.pool]);
    }
    return named.map(([pool, raw]) => ({
      pool,
      open: raw._allConnections?.length ?? 0,
      idle: raw._freeConnections?.length ?? 0,
      waiting: raw._connectionQueue?.length ?? 0,
      max: raw.config?.connectionLimit ?? 0,
    }));
  }
}
