import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DatabaseAvailability } from '../database/database-availability';

/** How long a probe waits for the database or Redis before calling it down. */
export const PROBE_TIMEOUT_MS = 1000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A short, driver-free reason: the probe reply is public, so no host names or SQL. */
function reason(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error && /did not answer/.test(error.message) ? 'timeout' : 'error';
}

/**
 * Readiness of what requests need: the database connection that serves reads (a replica when
 * DATABASE_REPLICA_URLS is set, else the primary) and Redis when REDIS_URL is set.
 */
@Injectable()
export class ReadinessIndicators implements OnModuleDestroy {
  private readonly redis?: Redis;
  /** What serves reads, as readiness names it: the replicas when there are any. */
  private readonly readsFrom: 'database' | 'replica';

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    private readonly availability: DatabaseAvailability,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.readsFrom = config.database.replicaUrls.length > 0 ? 'replica' : 'database';
    if (config.redisUrl) {
      // Its own small connection: a probe must not queue behind, or retry like, request traffic.
      this.redis = new Redis(config.redisUrl, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: PROBE_TIMEOUT_MS,
        // No reconnect loop of its own: the next probe connects again.
        retryStrategy: () => null,
      });
      this.redis.on('error', () => undefined); // reported through the probe, not as a crash
    }
  }

  async database() {
    // Not connected yet (boot with the database down): the background attempts say why.
    if (!this.availability.isUp()) {
      return this.indicators.check('database').down({ message: this.availability.reason() });
    }
    const session = this.indicators.check(this.readsFrom);
    const runner = this.dataSource.createQueryRunner('slave');
    const ping = runner.query('SELECT 1').finally(() => runner.release());
    try {
      await withTimeout(ping, PROBE_TIMEOUT_MS, 'the database');
      return session.up();
    } catch (error) {
      ping.catch(() => undefined);
      return session.down({ message: reason(error) });
    }
  }

  redisConfigured(): boolean {
    return this.redis !== undefined;
  }

  async redisPing() {
    const session = this.indicators.check('redis');
    const redis = this.redis!;
    try {
      if (redis.status === 'wait' || redis.status === 'end') {
        await withTimeout(redis.connect(), PROBE_TIMEOUT_MS, 'Redis');
      }
      await withTimeout(redis.ping(), PROBE_TIMEOUT_MS, 'Redis');
      return session.up();
    } catch (error) {
      return session.down({ message: reason(error) });
    }
  }

  onModuleDestroy(): void {
    // Disconnecting a client that already ended leaves a 2 s timer behind (ioredis 5.11).
    if (this.redis && this.redis.status !== 'end') this.redis.disconnect();
  }
}
