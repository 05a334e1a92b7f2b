import type { AppConfig } from '../config/app-config';
import type { ApiToken } from './api-token.entity';
import type { ApiTokensRepository } from './api-tokens.repository';
import { TokenAuthenticator } from './token-authenticator';
import { generateToken, hashToken } from './token-format';

const TTL_MS = 5000;

interface TokenTable {
  row: ApiToken | null;
  lookups: number;
  findByHash(tokenHash: string): Promise<ApiToken | null>;
  touchLastUsed(): Promise<void>;
}

/** A token table of one row at most, whose look-ups are counted. */
function tokenTable(): TokenTable {
  const table: TokenTable = {
    row: null,
    lookups: 0,
    findByHash: async (tokenHash) => {
      table.lookups++;
      return table.row && table.row.token_hash === tokenHash ? { ...table.row } : null;
    },
    touchLastUsed: async () => undefined,
  };
  return table;
}

const rowFor = (token: string, fields: Partial<ApiToken> = {}): ApiToken => ({
  id: 7,
  name: 'app',
  token_hash: hashToken(token),
  token_prefix: token.slice(0, 10),
  scopes: 'users:read login_activities:read',
  organization_id: null,
  expires_at: null,
  revoked_at: null,
  last_used_at: null,
  created_at: new Date(0),
  ...fields,
});

describe('TokenAuthenticator', () => {
  let now: number;
  let table: TokenTable;
  let authenticator: TokenAuthenticator;

  beforeEach(() => {
    now = Date.parse('2026-11-25T12:00:00Z');
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    table = tokenTable();
    authenticator = new TokenAuthenticator(
      table as unknown as ApiTokensRepository,
      {
        tokenCacheTtlMs: TTL_MS,
        database: { statementTimeoutMs: 5000 },
      } as AppConfig,
    );
  });
  afterEach(() => jest.restoreAllMocks());

  it('refuses at once what cannot be a token, and looks nothing up for it', async () => {
    expect(authenticator.refusesAtOnce('not-a-token')).toBe(true);
    expect(await authenticator.authenticate('not-a-token')).toBeNull();
    expect(table.lookups).toBe(0);
  });

  it('has a token never seen looked up, then refuses it at once while its miss is fresh', async () => {
    const token = generateToken();
    expect(authenticator.refusesAtOnce(token)).toBe(false);
    expect(await authenticator.authenticate(token)).toBeNull();
    expect(authenticator.refusesAtOnce(token)).toBe(true);
    expect(await authenticator.authenticate(token)).toBeNull();
    expect(table.lookups).toBe(1);
  });

  it('accepts a token created after it was refused as unknown once TOKEN_CACHE_TTL_MS has passed', async () => {
    const token = generateToken();
    expect(await authenticator.authenticate(token)).toBeNull();
    table.row = rowFor(token);
    now += TTL_MS - 1;
    expect(authenticator.refusesAtOnce(token)).toBe(true);
    now += 1;
    expect(authenticator.refusesAtOnce(token)).toBe(false);
    expect(await authenticator.authenticate(token)).toMatchObject({ tokenId: 7 });
    expect(authenticator.refusesAtOnce(token)).toBe(false);
  });

  it('refuses a revoked token within TOKEN_CACHE_TTL_MS, at once after its next look-up', async () => {
    const token = generateToken();
    table.row = rowFor(token);
    expect(await authenticator.authenticate(token)).toMatchObject({ tokenId: 7 });
    table.row = rowFor(token, { revoked_at: new Date(now) });
    now += TTL_MS;
    expect(authenticator.refusesAtOnce(token)).toBe(false);
    expect(await authenticator.authenticate(token)).toBeNull();
    expect(authenticator.refusesAtOnce(token)).toBe(true);
  });

  it('refuses a cached token at once from the moment it expires', async () => {
    const token = generateToken();
    table.row = rowFor(token, { expires_at: new Date(now + 1000) });
    expect(await authenticator.authenticate(token)).not.toBeNull();
    expect(authenticator.refusesAtOnce(token)).toBe(false);
    now += 1000;
    expect(authenticator.refusesAtOnce(token)).toBe(true);
    expect(await authenticator.authenticate(token)).toBeNull();
  });

  it('gives every request of one look-up the same principal, which no request can change', async () => {
    const token = generateToken();
    table.row = rowFor(token);
    const first = await authenticator.authenticate(token);
    const second = await authenticator.authenticate(token);
    expect(second).toBe(first);
    expect(first).toEqual({
      tokenId: 7,
      tokenName: 'app',
      scopes: new Set(['users:read', 'login_activities:read']),
      organizationId: null,
    });
    expect(Object.isFrozen(first)).toBe(true);
  });

  it('caches nothing with TOKEN_CACHE_TTL_MS=0: every request looks its token up', async () => {
    authenticator = new TokenAuthenticator(
      table as unknown as ApiTokensRepository,
      {
        tokenCacheTtlMs: 0,
        database: { statementTimeoutMs: 5000 },
      } as AppConfig,
    );
    const token = generateToken();
    expect(await authenticator.authenticate(token)).toBeNull();
    expect(authenticator.refusesAtOnce(token)).toBe(false);
    await authenticator.authenticate(token);
    expect(table.lookups).toBe(2);
  });
});
