import { isRegisteredScope, registeredScopeNames } from '../common/auth/scope-registry';
import type { ApiToken } from './api-token.entity';
import { ApiTokensRepository } from './api-tokens.repository';
import { displayPrefix, generateToken, hashToken } from './token-format';

export interface IssueTokenOptions {
  name: string;
  scopes: readonly string[];
  organizationId?: number | null;
  /** Lifetime in milliseconds; none means the token does not expire. */
  expiresInMs?: number | null;
}

export interface IssuedToken {
  id: number;
  /** The token itself: shown once, never stored. */
  token: string;
  record: ApiToken;
}

export class TokenIssueError extends Error {}

/** Creates, lists and revokes tokens: used by the token CLI and the test kit. */
export class TokenIssuer {
  constructor(private readonly tokens: ApiTokensRepository) {}

  async issue(options: IssueTokenOptions): Promise<IssuedToken> {
    const name = options.name.trim();
    if (!name || name.length > 255) {
      throw new TokenIssueError('name must be 1 to 255 characters');
    }
    const unknown = options.scopes.filter((scope) => !isRegisteredScope(scope));
    if (unknown.length || options.scopes.length === 0) {
      const known = registeredScopeNames();
      throw new TokenIssueError(
        `scopes must be a non-empty list of: ${known.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`,
      );
    }
    const token = generateToken();
    const record = await this.tokens.insert({
      name,
      tokenHash: hashToken(token),
      tokenPrefix: displayPrefix(token),
      scopes: [...new Set(options.scopes)],
      organizationId: options.organizationId ?? null,
      // 0 (or less) has expired at once; only null or undefined never expires.
      expiresAt: options.expiresInMs == null ? null : new Date(Date.now() + options.expiresInMs),
    });
    return { id: record.id, token, record };
  }

  list(): Promise<ApiToken[]> {
    return this.tokens.list();
  }

  revoke(id: number): Promise<boolean> {
    return this.tokens.revoke(id);
  }
}
