/**
 * The platform's own scopes, for callers that need the names. Each is registered (with its
 * description) by its module's listing file, as any module registers its scopes; the token issuer
 * accepts whatever is registered (see scope-registry.ts).
 */
export const SCOPES = ['users:read', 'login_activities:read'] as const;
/** A scope name, e.g. `users:read`: any scope registered in the scope registry. */
export type Scope = string;

/** Who is calling: the authenticated token, as the guard attaches it to the request. */
export interface Principal {
  tokenId: number;
  tokenName: string;
  scopes: ReadonlySet<string>;
  /** When set, the token sees only this organization's rows. */
  organizationId: number | null;
}
