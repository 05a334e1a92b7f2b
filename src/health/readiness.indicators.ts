import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import Redis from 'ioredis';
import { DataSource } from 'typeorm';
import { TailWatch } from '../common/listing/tail-watch';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { DatabaseAvailability } from '../database/database-availability';
import { ReadReplicas } from '../database/read-replicas';
import { withTimeout } from '../common/with-timeout';
import { isRefusedDatabase } from '../redis/shared-redis';

/** How long a probe waits for the database or Redis before calling it down. */
export const PROBE_TIMEOUT_MS = 1000;

/** `promise`, or a rejection naming `what` as not answering within `ms`. */
const answeredWithin = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  withTimeout(promise, ms, () => new Error(`${what} did not answer within ${ms} ms`));

/** A short, driver-free reason: the probe reply is public, so no host names or SQL. */
function reason(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error && /did not answer/.test(error.message) ? 'timeout' : 'error';
}

/**
 * Readiness of what requests need: the primary (tokens are always read there, and it serves the
 * listings whenever no replica is in the rotation). The read replicas and Redis are reported,
 * never down: losing one costs no request (without Redis each instance uses local state), and
 * failing every instance's readiness with it would turn that into an outage.
 */
@Injectable()
export class ReadinessIndicators implements OnModuleDestroy {
  private readonly redis?: Redis;
  private lastRedisErrorReason = 'error';
  private connecting?: Promise<string | undefined>;
  /** Set while the last connection's SELECT was refused, until one passes. */
  private refusal?: string;

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    private readonly availability: DatabaseAvailability,
    private readonly replicas: ReadReplicas,
    private readonly tailWatch: TailWatch,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
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
      // Reported through the probe, not as a crash: its code says why a connect failed, which the
      // rejected command itself ("Connection is closed.") does not.
      this.redis.on('error', (error) => (this.lastRedisErrorReason = reason(error)));
      this.redis.on('ready', () => (this.lastRedisErrorReason = 'error'));
    }
  }

  async database() {
    // Not connected yet (boot with the database down): the background attempts say why.
    if (!this.availability.isUp()) {
      return this.indicators.check('database').down({ message: this.availability.reason() });
    }
    const session = this.indicators.check('database');
    const ping = this.dataSource.query('SELECT 1');
    try {
      await answeredWithin(ping, PROBE_TIMEOUT_MS, 'the database');
      return session.up();
    } catch (error) {
      ping.catch(() => undefined);
      return session.down({ message: reason(error) });
    }
  }

  /** Tail walks hold rows back by the ids seen TAIL_HOLDBACK_MS before: none yet after a start. */
  tail() {
    const check = this.indicators.check('tail');
    // As of what the stalest replica in the rotation holds: reads go there.
    const settled = this.tailWatch.settled(this.replicas.mostStaleMs());
    return settled ? check.up() : check.down({ message: 'settling' });
  }

  tailWatched(): boolean {
    return this.tailWatch.active;
  }

  replicasConfigured(): boolean {
    return this.replicas.states().length > 0;
  }

  /** Each replica's place in the read rotation, and why it is out: details, never a failure. */
  replicaStates() {
    const details = Object.fromEntries(
      this.replicas.states().map(({ name, inRotation, reason, detail, lagSeconds }) => [
        name,
        {
          in_rotation: inRotation,
          lag_seconds: lagSeconds,
          ...(reason ? { reason, detail } : {}),
        },
      ]),
    );
    return this.indicators.check('replicas').up(details);
  }

  redisConfigured(): boolean {
    return this.redis !== undefined;
  }

  /** Whether Redis answers, and why not: details, never a failure. */
  async redisPing() {
    const session = this.indicators.check('redis');
    // Probes at once share one connection attempt, and its reason.
    this.connecting ??= this.connectIfClosed().finally(() => (this.connecting = undefined));
    const notConnected = await this.connecting;
    if (notConnected) return session.up({ reachable: false, reason: notConnected });
    try {
      await answeredWithin(this.redis!.ping(), PROBE_TIMEOUT_MS, 'Redis');
      return session.up({ reachable: true });
    } catch (error) {
      return session.up({ reachable: false, reason: this.reasonFor(error) });
    }
  }

  /** Connects the probe's client where it is closed: undefined once connected, else why not. */
  private async connectIfClosed(): Promise<string | undefined> {
    const redis = this.redis!;
    if (redis.status !== 'wait' && redis.status !== 'end') return undefined;
    let refused = false;
    const onError = (error: Error) => (refused ||= isRefusedDatabase(error));
    redis.on('error', onError);
    let failure: unknown;
    try {
      await answeredWithin(redis.connect(), PROBE_TIMEOUT_MS, 'Redis');
    } catch (error) {
      failure = error;
    } finally {
      redis.off('error', onError);
    }
    this.refusal = refused ? 'database_refused' : undefined;
    // Connected on database 0 instead: not what requests use (SharedRedis does not use it).
    if (refused) redis.disconnect(false);
    return refused || failure ? this.reasonFor(failure) : undefined;
  }

  /** Why Redis did not answer: a refused database, else the failure's code or the last one's. */
  private reasonFor(error: unknown): string {
    const why = reason(error);
    return this.refusal ?? (why === 'error' ? this.lastRedisErrorReason : why);
  }

  onModuleDestroy(): void {
    // Disconnecting a client that already ended leaves a 2 s timer behind (ioredis 5.11).
    if (this.redis && this.redis.status !== 'end') this.redis.disconnect();
  }
}
