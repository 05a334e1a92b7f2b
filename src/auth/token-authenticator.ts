import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import type { Principal } from '../common/auth/principal';
import { ApiTokensRepository } from './api-tokens.repository';
import type { ApiToken } from './api-token.entity';
import { hashToken, TOKEN_PATTERN } from './token-format';

interface CachedLookup {
  token: ApiToken | null;
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
export class TokenAuthenticator {
  private readonly logger = new Logger(TokenAuthenticator.name);
  private readonly lookups = new Map<string, CachedLookup>();
  private readonly inFlight = new Map<string, Promise<ApiToken | null>>();
  private readonly lastUsedWrites = new Map<number, number>();
  private readonly ttlMs: number;

  constructor(
    private readonly tokens: ApiTokensRepository,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.ttlMs = config.tokenCacheTtlMs;
  }

  async authenticate(presented: string): Promise<Principal | null> {
    if (!TOKEN_PATTERN.test(presented)) return null;
    const token = await this.lookUp(hashToken(presented));
    const now = Date.now();
    if (!token || token.revoked_at || (token.expires_at && token.expires_at.getTime() <= now)) {
      return null;
    }
    this.noteUse(token.id, now);
    return {
      tokenId: token.id,
      tokenName: token.name,
      scopes: new Set(token.scopes.split(/\s+/).filter(Boolean)),
      organizationId: token.organization_id,
    };
  }

  private async lookUp(tokenHash: string): Promise<ApiToken | null> {
    const cached = this.lookups.get(tokenHash);
    if (cached && cached.cachedUntil > Date.now()) return cached.token;

    const running = this.inFlight.get(tokenHash);
    if (running) return running;

    const promise = this.tokens
      .findByHash(tokenHash)
      .then((token) => {
        if (this.ttlMs > 0) this.remember(tokenHash, token);
        return token;
      })
      .finally(() => this.inFlight.delete(tokenHash));
    this.inFlight.set(tokenHash, promise);
    return promise;
  }

  private remember(tokenHash: string, token: ApiToken | null): void {
    if (this.lookups.size >= MAX_CACHED_LOOKUPS) {
      const oldest = this.lookups.keys().next().value;
      if (oldest !== undefined) this.lookups.delete(oldest);
    }
    this.lookups.set(tokenHash, { token, cachedUntil: Date.now() + this.ttlMs });
  }

  /** Records use off the request path, at most once a minute per token and process. */
  private noteUse(tokenId: number, now: number): void {
    const last = this.lastUsedWrites.get(tokenId) ?? 0;
    if (now - last < LAST_USED_INTERVAL_MS) return;
    this.lastUsedWrites.set(tokenId, now);
    setImmediate(() => {
      this.tokens.touchLastUsed(tokenId, new Date(now)).catch((error: unknown) => {
        this.logger.warn(`could not record last_used_at for token ${tokenId}: ${String(error)}`);
      });
    });
  }
}
