/**
 * How to reach a database URL: the URL without its query, and the TLS its `ssl=true` asks for
 * (the server's certificate verified against Node's CAs and NODE_EXTRA_CA_CERTS, for a provider's
 * own CA). Read here, once, for every connection the service opens (TypeORM's pools, the replica
 * checks, KILL QUERY): TypeORM would drop the query and mysql2 would read it its own way.
 */
export function databaseConnection(url: string): {
  url: string;
  ssl?: { rejectUnauthorized: true };
} {
  const parsed = new URL(url);
  const tls = parsed.searchParams.get('ssl') === 'true';
  parsed.search = '';
  return { url: parsed.toString(), ...(tls && { ssl: { rejectUnauthorized: true } }) };
}

/** The same as mysql2's own connection options (`uri`). */
export function mysql2Connection(databaseUrl: string): {
  uri: string;
  ssl?: { rejectUnauthorized: true };
} {
  const { url, ...tls } = databaseConnection(databaseUrl);
  return { uri: url, ...tls };
}
