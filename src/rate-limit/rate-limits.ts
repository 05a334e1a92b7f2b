import { Inject, Injectable } from '@nestjs/common';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { SharedRedis } from '../redis/shared-redis';

/** The window of every limit, in seconds. */
export const RATE_LIMIT_WINDOW_SECONDS = 60;
/** A window this close to its end gets nothing back: the give-back might land in the next. */
const WINDOW_END_MARGIN_MS = 100;

export interface RateLimitDecision {
  allowed: boolean;
  /** Requests left in the current window. */
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSeconds: number;
  /** When the window ends (epoch ms). */
  endsAt: number;
}

/**
 * The service's rate-limit counters: requests per token and rejected tokens per client IP.
 * In memory by default; in Redis when REDIS_URL is set, so that instances share one budget.
 *
 * If Redis cannot be reached or refuses a call, each instance falls back to its own in-memory
 * counters (`withFallback`): the service stays up (fail-open on the shared budget) while still
 * limiting every client per instance, and goes back to Redis once it answers again.
 */
@Injectable()
export class RateLimits {
  private readonly requests?: Limiter;
  private readonly authFailures: Limiter;
  readonly perMinute: number;
  readonly authFailuresPerMinute: number;

  constructor(@Inject(APP_CONFIG) config: AppConfig, sharedRedis: SharedRedis) {
    this.perMinute = config.rateLimit.perMinute;
    this.authFailuresPerMinute = config.rateLimit.authFailuresPerMinute;
    // Rejected tokens are limited whatever RATE_LIMIT_PER_MINUTE says, shared like the budgets.
    const redis = sharedRedis.client();
    const limiter = (name: string, points: number): Limiter => {
      const options = { points, duration: RATE_LIMIT_WINDOW_SECONDS };
      const keyPrefix = `${config.redisKeyPrefix}rate:${name}`;
      const memory = new RateLimiterMemory({ ...options, keyPrefix });
      if (!redis) return memory;
      const shared = new RateLimiterRedis({
        ...options,
        keyPrefix,
        storeClient: redis,
        rejectIfRedisNotReady: true,
      });
      return withFallback(shared, memory, (error) =>
        sharedRedis.noteRefusedCommand(
          'rate-limit command: rate limits use per-instance counters',
          error,
        ),
      );
    };
    if (this.perMinute > 0) this.requests = limiter('requests', this.perMinute);
    this.authFailures = limiter('auth-failures', this.authFailuresPerMinute);
  }

  /** Whether requests are limited per token (RATE_LIMIT_PER_MINUTE > 0). */
  get enabled(): boolean {
    return this.requests !== undefined;
  }

  /** Spends one request of `key`'s budget; a refused one spends nothing. */
  async consume(key: string): Promise<RateLimitDecision> {
    if (!this.requests) throw new Error('rate limiting is off');
    try {
      return this.decision(await this.requests.consume(key), true);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      // The store counted it: a 304's request given back later must not go to a refused one.
      await this.requests.reward(key, 1);
      return this.decision(rejection, false);
    }
  }

  /**
   * Spends `points` of `key`'s budget (an export's rows), waiting for the next window whenever
   * this one has no room left: an export slows to the budget instead of running past it. Stops,
   * spending no more, once `stopped` fires.
   */
  async spendWaiting(key: string, points: number, stopped?: AbortSignal): Promise<void> {
    for (let left = points; left > 0 && this.requests && !stopped?.aborted;) {
      const part = Math.min(left, this.perMinute);
      try {
        await this.requests.consume(key, part);
        left -= part;
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        await pause(Math.max(1, rejection.msBeforeNext), stopped);
      }
    }
  }

  /**
   * Gives back the request of `key` that `decision` spent (a 304 spends none), unless its window
   * has ended: given back to the next one, it would start that window above its budget.
   */
  async giveBack(key: string, decision: RateLimitDecision): Promise<void> {
    if (!this.requests || Date.now() >= decision.endsAt - WINDOW_END_MARGIN_MS) return;
    // Only to the store that counted it (Redis, or the fallback while Redis is away).
    const counted = await this.requests.get(key);
    if (counted && counted.consumedPoints > 0) await this.requests.reward(key, 1);
  }

  /** Seconds a client IP must wait because it sent too many rejected tokens; 0 when it may go on. */
  async authFailureBlockSeconds(ip: string): Promise<number> {
    const state = await this.authFailures.get(ip);
    if (!state || state.consumedPoints < this.authFailuresPerMinute) return 0;
    return Math.max(1, Math.ceil(state.msBeforeNext / 1000));
  }

  /** Counts one rejected token of `ip`. */
  async recordAuthFailure(ip: string): Promise<void> {
    await this.authFailures.penalty(ip, 1);
  }

  private decision(result: RateLimiterRes, allowed: boolean): RateLimitDecision {
    return {
      allowed,
      remaining: Math.max(0, result.remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(result.msBeforeNext / 1000)),
      endsAt: Date.now() + result.msBeforeNext,
    };
  }
}

/** Resolves after `ms`, or at once when `stopped` fires. */
function pause(ms: number, stopped?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stopped?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stopped?.addEventListener('abort', done, { once: true });
  });
}

/** The calls the service makes of a limiter. */
type Limiter = Pick<RateLimiterAbstract, 'consume' | 'reward' | 'get' | 'penalty'>;

/**
 * `shared`, or `fallback` for a call the store fails (not a refusal of the budget): each instance
 * then limits on its own until Redis takes the calls again.
 */
function withFallback(
  shared: Limiter,
  fallback: Limiter,
  failed: (error: unknown) => void,
): Limiter {
  const guarded =
    <A extends unknown[], R>(call: (limiter: Limiter, ...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(shared, ...args);
      } catch (error) {
        if (error instanceof RateLimiterRes) throw error;
        failed(error);
        return call(fallback, ...args);
      }
    };
  return {
    consume: guarded((limiter, key: string | number, points?: number) =>
      limiter.consume(key, points),
    ),
    reward: guarded((limiter, key: string | number, points?: number) =>
      limiter.reward(key, points),
    ),
    get: guarded((limiter, key: string | number) => limiter.get(key)),
    penalty: guarded((limiter, key: string | number, points?: number) =>
      limiter.penalty(key, points),
    ),
  };
}
