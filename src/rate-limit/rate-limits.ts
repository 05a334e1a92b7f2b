import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import Redis from 'ioredis';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/** The window of every limit, in seconds. */
export const RATE_LIMIT_WINDOW_SECONDS = 60;
/** How long to wait for Redis at boot before serving with per-process counters meanwhile. */
const REDIS_CONNECT_TIMEOUT_MS = 2000;

export interface RateLimitDecision {
  allowed: boolean;
  /** Requests left in the current window. */
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSeconds: number;
}

/**
 * The service's rate-limit counters: requests per token and rejected tokens per client IP.
 * In memory by default; in Redis when REDIS_URL is set, so that instances share one budget.
 *
 * If Redis cannot be reached, each instance falls back to its own in-memory counters (the
 * library's insurance limiter): the service stays up (fail-open on the shared budget) while still
 * limiting every client per instance, and goes back to Redis once it answers again.
 */
@Injectable()
export class RateLimits implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RateLimits.name);
  private readonly redis?: Redis;
  private readonly requests?: RateLimiterAbstract;
  private readonly authFailures: RateLimiterAbstract;
  readonly perMinute: number;
  readonly authFailuresPerMinute: number;
  private redisErrorLoggedAt = 0;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.perMinute = config.rateLimit.perMinute;
    this.authFailuresPerMinute = config.rateLimit.authFailuresPerMinute;
    if (config.redisUrl && this.perMinute > 0) {
      this.redis = new Redis(config.redisUrl, {
        lazyConnect: true,
        // Fail fast instead of queueing commands while disconnected: the insurance limiter answers.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        // A Redis that hangs must not hold requests: past this, the insurance limiter answers.
        commandTimeout: 500,
        // How long a close waits for a half-open socket; the default 2 s delays shutdown.
        disconnectTimeout: 200,
      });
      this.redis.on('error', (error: Error) => this.noteRedisError(error));
    }
    const limiter = (name: string, points: number): RateLimiterAbstract => {
      const options = { points, duration: RATE_LIMIT_WINDOW_SECONDS };
      const keyPrefix = `${config.redisKeyPrefix}rate:${name}`;
      if (!this.redis) return new RateLimiterMemory({ ...options, keyPrefix });
      return new RateLimiterRedis({
        ...options,
        keyPrefix,
        storeClient: this.redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ ...options, keyPrefix }),
      });
    };
    if (this.perMinute > 0) this.requests = limiter('requests', this.perMinute);
    this.authFailures = limiter('auth-failures', this.authFailuresPerMinute);
  }

  get enabled(): boolean {
    return this.requests !== undefined;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.redis) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer')), REDIS_CONNECT_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.redis.connect(), timeout]);
    } catch (error) {
      this.noteRedisError(error as Error);
    } finally {
      clearTimeout(timer);
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.redis?.disconnect();
  }

  /** Spends one request of `key`'s budget. */
  async consume(key: string): Promise<RateLimitDecision> {
    if (!this.requests) throw new Error('rate limiting is off');
    try {
      return this.decision(await this.requests.consume(key), true);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return this.decision(rejection, false);
      throw rejection;
    }
  }

  /** Seconds a client IP must wait because it sent too many rejected tokens; 0 when it may go on. */
  async authFailureBlockSeconds(ip: string): Promise<number> {
    const state = await this.authFailures.get(ip);
    if (!state || state.consumedPoints < this.authFailuresPerMinute) return 0;
    return Math.max(1, Math.ceil(state.msBeforeNext / 1000));
  }

  async recordAuthFailure(ip: string): Promise<void> {
    await this.authFailures.penalty(ip, 1);
  }

  private decision(result: RateLimiterRes, allowed: boolean): RateLimitDecision {
    return {
      allowed,
      remaining: Math.max(0, result.remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(result.msBeforeNext / 1000)),
    };
  }

  private noteRedisError(error: Error): void {
    // Redis errors repeat on every reconnect attempt: one line every half minute is enough.
    const now = Date.now();
    if (now - this.redisErrorLoggedAt < 30_000) return;
    this.redisErrorLoggedAt = now;
    this.logger.warn(
      `Redis unavailable, rate limits fall back to per-instance counters: ${error.message}`,
    );
  }
}
