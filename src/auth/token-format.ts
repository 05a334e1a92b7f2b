import { hash, randomBytes } from 'node:crypto';

export const TOKEN_PREFIX = 'lsk_';
/** `lsk_` and 32 random bytes in base64url: recognizable, 256 bits of entropy. */
export const TOKEN_PATTERN = /^lsk_[A-Za-z0-9_-]{43}$/;

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** Runs for every authenticated request: the one-shot digest costs a third of a Hash object's. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** The part of a token shown by `token list`, enough to tell tokens apart and nothing more. */
export function displayPrefix(token: string): string {
  return token.slice(0, TOKEN_PREFIX.length + 6);
}

const DURATION = /^(\d{1,6})([smhdw])$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** Parses `90s`, `15m`, `12h`, `30d` or `2w` into milliseconds; null when it is not one. */
export function parseDuration(text: string): number | null {
  const match = DURATION.exec(text.trim());
  if (!match) return null;
  const amount = Number(match[1]);
  if (amount === 0) return null;
  return amount * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

const BEARER_CREDENTIALS = /^Bearer +(\S+)$/i;

/** The credentials of `Authorization: Bearer <credentials>` (RFC 6750 §2.1); null for anything else. */
export function bearerCredentials(authorization: string | undefined): string | null {
  const match = authorization === undefined ? null : BEARER_CREDENTIALS.exec(authorization);
  return match ? match[1] : null;
}

/** The presented token when the header carries something shaped like one of ours; else null. */
export function presentedToken(authorization: string | undefined): string | null {
  const credentials = bearerCredentials(authorization);
  return credentials !== null && TOKEN_PATTERN.test(credentials) ? credentials : null;
}
