import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { Principal } from '../common/auth/principal';
import { ApiTokensRepository } from './api-tokens.repository';
import type { ApiToken } from './api-token.entity';
import { RequestDeadlineError } from '../database/request-deadline.interceptor';
import { AppClosingError } from '../database/statement-runner';
import { withTimeout } from '../common/with-timeout';
import { hashToken, TOKEN_PATTERN } from './token-format';

interface CachedLookup {
  token: ApiToken | null;
  /** The token's principal, built once per look-up rather than once per request. */
  principal: Principal | null;
  cachedUntil: number;
}

/** `last_used_at` is written at most this often per token. */
const LAST_USED_INTERVAL_MS = 60_000;
const MAX_CACHED_LOOKUPS = 50_000;

/**
 * Turns a presented bearer token into a principal. Look-ups (found or not) are cached for
 * TOKEN_CACHE_TTL_MS, so a revocation takes effect within that time and a flood of the same bad
 * token costs one database look-up; expiry is checked on every request. Strings that cannot be
 * tokens are refused without touching the database.
 */
@Injectable()
export class TokenAuthenticator implements OnModuleDestroy {
  private readonly logger = new Logger(TokenAuthenticator.name);
  private readonly lookups = new Map<string, CachedLookup>();
  private readonly inFlight = new Map<string, Promise<CachedLookup>>();
  private readonly byRequest = new WeakMap<object, Promise<Principal | null>>();
  private readonly lastUsedWrites = new Map<number, number>();
  private writingLastUse = false;
  /** Writes of a last use that failed in a row, and when the next may be tried. */
  private failedLastUseWrites = 0;
  private lastUseRetryAt = 0;
  /** Each token's use not written yet (another was being written, or its write failed). */
  private readonly unwrittenUses = new Map<number, number>();
  private retryTimer?: NodeJS.Timeout;
  private closing = false;
  /** Tokens whose failed write was warned of, until one passes. */
  private readonly warnedTokens = new Set<number>();
  private readonly ttlMs: number;
  private readonly limitMs: number;

  constructor(
    private readonly tokens: ApiTokensRepository,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.ttlMs = config.tokenCacheTtlMs;
    this.limitMs = config.database.statementTimeoutMs;
  }

  async authenticate(presented: string): Promise<Principal | null> {
    if (!TOKEN_PATTERN.test(presented)) return null;
    const tokenHash = hashToken(presented);
    const cached = this.fresh(tokenHash);
    const lookup = cached ?? (await this.withinLimit(this.lookUp(tokenHash)));
    const now = Date.now();
    const token = lookup.token;
    if (!usable(token, now)) return null;
    this.noteUse(token.id, now);
    return lookup.principal;
  }

  /**
   * Whether `presented` is refused whatever the database says now: it cannot be a token, or its
   * look-up, still fresh, found none, or a revoked or expired one. Synchronous and without a
   * database look-up, so that such a token is refused ahead of the rest of the request's pipeline
   * (`bearerPrecheck`); false means "look it up", never "valid".
   */
  refusesAtOnce(presented: string): boolean {
    return this.knownAtOnce(presented) === 'refused';
  }

  /**
   * `authenticate`, once per request: the rate limit, which looks an unknown token up to know
   * whether it was rejected, and the guard share that look-up.
   */
  authenticateFor(request: object, presented: string): Promise<Principal | null> {
    let lookup = this.byRequest.get(request);
    if (!lookup) {
      lookup = this.authenticate(presented);
      this.byRequest.set(request, lookup);
    }
    return lookup;
  }

  /** Gives `request` the look-up `authenticateFor` makes (or made) for `first`: the same token. */
  shareLookUp(request: object, first: object): void {
    const lookup = this.byRequest.get(first);
    if (lookup) this.byRequest.set(request, lookup);
  }

  /** Whether `presented`'s look-up, still fresh, found a usable token: no look-up to come. */
  acceptsAtOnce(presented: string): boolean {
    return this.knownAtOnce(presented) === 'accepted';
  }

  /** What is known of `presented` without a look-up: its form, or its look-up while fresh. */
  private knownAtOnce(presented: string): 'accepted' | 'refused' | undefined {
    if (!TOKEN_PATTERN.test(presented)) return 'refused';
    const cached = this.fresh(hashToken(presented));
    if (cached === undefined) return undefined;
    return usable(cached.token, Date.now()) ? 'accepted' : 'refused';
  }

  /** The cached look-up of `tokenHash` while it is fresh. */
  private fresh(tokenHash: string): CachedLookup | undefined {
    const cached = this.lookups.get(tokenHash);
    return cached && cached.cachedUntil > Date.now() ? cached : undefined;
  }

  /**
   * `work`, or a 503 once DB_STATEMENT_TIMEOUT_MS has passed: the guard runs before the request's
   * deadline is set, and a server gone silent holds a statement to its client bound, 2 s more.
   */
  private withinLimit<T>(work: Promise<T>): Promise<T> {
    if (this.limitMs <= 0) return work;
    return withTimeout(work, this.limitMs, () => new RequestDeadlineError());
  }

  private async lookUp(tokenHash: string): Promise<CachedLookup> {
    const running = this.inFlight.get(tokenHash);
    if (running) return running;

    const promise = this.tokens
      .findByHash(tokenHash)
      .then((token) => {
        const lookup: CachedLookup = {
          token,
          principal: token && principalOf(token),
          cachedUntil: Date.now() + this.ttlMs,
        };
        if (this.ttlMs > 0) this.remember(tokenHash, lookup);
        return lookup;
      })
      .finally(() => this.inFlight.delete(tokenHash));
    this.inFlight.set(tokenHash, promise);
    return promise;
  }

  private remember(tokenHash: string, lookup: CachedLookup): void {
    if (this.lookups.size >= MAX_CACHED_LOOKUPS) {
      const oldest = this.lookups.keys().next().value;
      if (oldest !== undefined) this.lookups.delete(oldest);
    }
    this.lookups.set(tokenHash, lookup);
  }

  /**
   * Records use off the request path, at most once a minute per token and process, one write at a
   * time: writes held up (a lock on the table) take one pool connection, not one per token. A use
   * not written yet (another being written, or a write that failed) waits its turn, also when the
   * token is not used again.
   */
  private noteUse(tokenId: number, now: number): void {
    if (now - (this.lastUsedWrites.get(tokenId) ?? 0) < LAST_USED_INTERVAL_MS) return;
    this.unwrittenUses.set(tokenId, now);
    this.writeNextUse();
  }

  private writeNextUse(): void {
    const next = this.unwrittenUses.entries().next();
    if (this.writingLastUse || next.done || this.closing) return;
    const waitMs = this.lastUseRetryAt - Date.now();
    if (waitMs > 0) {
      this.retryTimer ??= setTimeout(() => {
        this.retryTimer = undefined;
        this.writeNextUse();
      }, waitMs).unref();
      return;
    }
    const [tokenId, at] = next.value;
    this.unwrittenUses.delete(tokenId);
    const previous = this.lastUsedWrites.get(tokenId) ?? 0;
    this.lastUsedWrites.set(tokenId, at);
    this.writingLastUse = true;
    setImmediate(() => {
      this.tokens
        .touchLastUsed(tokenId, new Date(at))
        .then(() => {
          if (this.warnedTokens.delete(tokenId)) {
            this.logger.log(`last_used_at of token ${tokenId} is recorded again`);
          }
          [this.failedLastUseWrites, this.lastUseRetryAt] = [0, 0];
        })
        .catch((error: unknown) => {
          if (error instanceof AppClosingError) return; // the app is shutting down
          // Not written (a lock held past its limit): tried again after a wait that doubles up
          // to a minute, so that a user that may not write (SELECT only) costs a failed
          // statement a minute, and its warning once, not one each request.
          if (this.lastUsedWrites.get(tokenId) === at) this.lastUsedWrites.set(tokenId, previous);
          if (!this.unwrittenUses.has(tokenId)) this.unwrittenUses.set(tokenId, at);
          this.failedLastUseWrites += 1;
          const waitMs = Math.min(
            LAST_USED_INTERVAL_MS,
            1000 * 2 ** (this.failedLastUseWrites - 1),
          );
          this.lastUseRetryAt = Date.now() + waitMs;
          // Once per token until its write passes (another token's passing does not reset it).
          if (!this.warnedTokens.has(tokenId)) {
            this.warnedTokens.add(tokenId);
            this.logger.warn(
              `could not record last_used_at for token ${tokenId}: ${String(error)}; tried again after 1 s, doubling up to a minute, until it is`,
            );
          }
        })
        .finally(() => {
          this.writingLastUse = false;
          this.writeNextUse();
        });
    });
  }

  onModuleDestroy(): void {
    this.closing = true;
    clearTimeout(this.retryTimer);
  }
}

/** Whether a looked-up token may authenticate now: it exists, is not revoked, has not expired. */
function usable(token: ApiToken | null, now: number): token is ApiToken {
  return !!token && !token.revoked_at && !(token.expires_at && token.expires_at.getTime() <= now);
}

/** Shared by every request of the look-up's lifetime, hence frozen. */
function principalOf(token: ApiToken): Principal {
  return Object.freeze({
    tokenId: token.id,
    tokenName: token.name,
    scopes: new Set(token.scopes.split(/\s+/).filter(Boolean)),
    organizationId: token.organization_id,
  });
}
