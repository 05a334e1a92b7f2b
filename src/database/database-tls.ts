/**
 * What a database URL's `ssl=true` asks for: TLS, the server's certificate verified against
 * Node's CAs (and NODE_EXTRA_CA_CERTS, for a provider's own CA). Read here, once, for every
 * connection the service opens (TypeORM's pools, the replica checks, KILL QUERY): TypeORM would
 * drop the query and mysql2 would read it its own way.
 */
export function databaseTls(url: string): { rejectUnauthorized: true } | undefined {
  return new URL(url).searchParams.get('ssl') === 'true' ? { rejectUnauthorized: true } : undefined;
}

/** The URL without its query, which `databaseTls` reads. */
export function withoutQuery(url: string): string {
  const parsed = new URL(url);
  parsed.search = '';
  return parsed.toString();
}
