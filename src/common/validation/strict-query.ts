/** A query parameter whose name or value is not percent-encoded UTF-8 (`%zz`, `%FF`, a bare `%`). */
export class MalformedEncoding {}

export type ParsedQuery = Record<
  string,
  string | MalformedEncoding | (string | MalformedEncoding)[]
>;

/**
 * Express's `query parser`: `name=value` pairs split at `&`, `+` read as a space, each side
 * percent-decoded as UTF-8, strictly. The stock parser kept a bad escape as text and a bad byte as
 * U+FFFD, so `q=50%` or `q=%FF` were answered as if well-formed; such a parameter is marked for
 * the validation pipe to refuse. A repeated name gives an array, as the stock parser does.
 */
export function parseQuery(text: string | null | undefined): ParsedQuery {
  // No prototype: `__proto__` and its kind are parameters like any other (and refused by name).
  const query = Object.create(null) as ParsedQuery;
  let parameters = 0;
  // Express hands over null for a URL without a query.
  for (const pair of (text ?? '').split('&')) {
    if (pair === '') continue;
    // As Node's querystring (Express's former parser) does: the rest are left out.
    if (++parameters > MAX_PARAMETERS) break;
    const equals = pair.indexOf('=');
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    const rawValue = equals < 0 ? '' : pair.slice(equals + 1);
    const name = decoded(rawName);
    const value = decoded(rawValue);
    const entry = name === undefined || value === undefined ? new MalformedEncoding() : value;
    const key = name ?? rawName;
    const previous = query[key];
    // In place: copying the list for each repeat made `a&a&…` (8,000 of them) cost 1 s.
    if (previous === undefined) query[key] = entry;
    else if (Array.isArray(previous)) previous.push(entry);
    else query[key] = [previous, entry];
  }
  return query;
}

/** At most this many pairs are read: Express reads a query up to three times a request. */
const MAX_PARAMETERS = 1000;

const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;

function decoded(text: string): string | undefined {
  // A bad escape without the cost of the exception decodeURIComponent would throw.
  if (BAD_ESCAPE.test(text)) return undefined;
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return undefined; // URIError: a bad escape, or bytes that are not UTF-8
  }
}
