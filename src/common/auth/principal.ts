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
