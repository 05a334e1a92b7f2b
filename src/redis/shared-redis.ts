import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/** How long boot waits for Redis before serving without it meanwhile. */
const CONNECT_WAIT_MS = 2_000;
/** How often a connected Redis is asked whether it still answers. */
const WATCH_MS = 1_000;
/** How soon a Redis that refused REDIS_URL's database is tried again (its databases may grow). */
const REFUSED_RETRY_MS = 5_000;

/**
 * Whether `error` is the server refusing REDIS_URL's database number (`/99` past its `databases`).
 * ioredis then reports ready anyway, on database 0, where another deployment's keys may live.
 */
export const isRefusedDatabase = (error: Error): boolean =>
  /DB index|\bSELECT\b/i.test(error.message);

/**
 * The one Redis connection that request traffic shares (rate-limit counters, listing totals),
 * opened only when one of them asks for it and REDIS_URL is set. It fails commands at once while
 * Redis is away instead of queueing them, so every user falls back to local state; it reconnects
 * by itself. (The readiness probe keeps a connection of its own: a probe must not queue behind,
 * or retry like, request traffic.)
 */
@Injectable()
export class SharedRedis implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SharedRedis.name);
  private connection?: Redis;
  private errorLoggedAt = 0;
  private watch?: NodeJS.Timeout;
  private pinging = false;
  private refusedRetry?: NodeJS.Timeout;
  private closed = false;
  private refusalLoggedAt = 0;
  private commandRefusalLoggedAt = 0;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The shared client, or undefined when REDIS_URL is not set. */
  client(): Redis | undefined {
    if (!this.config.redisUrl) return undefined;
    if (!this.connection) {
      this.connection = new Redis(this.config.redisUrl, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        // A Redis that hangs must not hold requests: past this, callers use their local fallback.
        commandTimeout: 500,
        // How long a close waits for a half-open socket; the default 2 s delays shutdown.
        disconnectTimeout: 200,
      });
      this.connection.on('error', (error: Error) => {
        if (isRefusedDatabase(error)) return this.refuseDatabase(error);
        this.noteError(error);
      });
      this.watch = setInterval(() => this.checkAnswers(), WATCH_MS).unref();
    }
    return this.connection;
  }

  /**
   * A Redis that hangs (a stalled link) still looks connected, so every command would wait for its
   * timeout. One that does not answer a PING in time is reconnected: until it is ready again,
   * commands fail at once and their users take their fallback.
   */
  private checkAnswers(): void {
    const redis = this.connection;
    if (!redis || redis.status !== 'ready' || this.pinging) return;
    this.pinging = true;
    redis
      .ping()
      .catch((error: Error) => {
        if (redis.status !== 'ready') return;
        this.noteError(error);
        redis.disconnect(true);
      })
      .finally(() => (this.pinging = false));
  }

  /** Gives Redis a moment to connect at boot; without it the service starts and works locally. */
  async onModuleInit(): Promise<void> {
    const redis = this.connection;
    if (!redis || redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, CONNECT_WAIT_MS);
      redis.once('ready', done);
    });
  }

  /** Last of the shutdown: the count cache gives its locks up before (`beforeApplicationShutdown`). */
  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.watch);
    clearTimeout(this.refusedRetry);
    const redis = this.connection;
    if (!redis) return;
    if (redis.status !== 'ready') {
      redis.disconnect();
      return;
    }
    try {
      await redis.quit();
    } catch {
      redis.disconnect();
    }
  }

  /** A configuration error, not an outage: not used until a later connection's SELECT passes. */
  private refuseDatabase(error: Error): void {
    const now = Date.now();
    if (now - this.refusalLoggedAt >= 30_000) {
      this.refusalLoggedAt = now;
      this.logger.error(
        `REDIS_URL names a database the Redis server refuses (${error.message}): Redis is not used; rate limits use per-instance counters and totals are counted locally`,
      );
    }
    const redis = this.connection;
    redis?.disconnect(false);
    clearTimeout(this.refusedRetry);
    this.refusedRetry = setTimeout(() => {
      if (!this.closed && redis?.status === 'end') redis.connect().catch(() => undefined);
    }, REFUSED_RETRY_MS).unref();
  }

  /**
   * A command Redis refused while up (out of memory, a key of another type), and what its user
   * does instead: said once per 30 s. A Redis that is down is said by the connection's errors.
   */
  noteRefusedCommand(what: string, error: unknown): void {
    const now = Date.now();
    if (this.connection?.status !== 'ready' || now - this.commandRefusalLoggedAt < 30_000) return;
    this.commandRefusalLoggedAt = now;
    this.logger.warn(`Redis refused a ${what}: ${String(error)}`);
  }

  private noteError(error: Error): void {
    // Errors repeat on every reconnect attempt: one line every half minute is enough.
    const now = Date.now();
    if (now - this.errorLoggedAt < 30_000) return;
    this.errorLoggedAt = now;
    this.logger.warn(
      `Redis unavailable: rate limits use per-instance counters and totals are counted locally: ${error.message}`,
    );
  }
}
