export const SCOPES = ['users:read', 'login_activities:read'] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling: the authenticated token, as the guard attaches it to the request. */
export interface Principal {
  tokenId: number;
  tokenName: string;
  scopes: ReadonlySet<string>;
  /** When set, the token sees only this organization's rows. */
  organizationId: number | null;
}
