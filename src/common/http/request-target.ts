/**
 * The path and query of a request target: an absolute-form target (`GET http://host/v1/users`,
 * which Node passes on as the URL) loses its scheme and host, so that no reply links elsewhere.
 */
export function pathAndQuery(target: string): string {
  const path = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
  return path.startsWith('/') ? path : `/${path}`;
}
