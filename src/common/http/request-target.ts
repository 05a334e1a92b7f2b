/**
 * The path and query of a request target: an absolute-form target (`GET http://host/v1/users`,
 * which Node passes on as the URL) loses its scheme and host, and `//host/…` its leading slashes
 * but one (a network-path reference), so that no reply links elsewhere.
 */
export function pathAndQuery(target: string): string {
  const path = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '').replace(/^\/{2,}/, '/');
  return path.startsWith('/') ? path : `/${path}`;
}
