import type { RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * A JSON API's headers (OWASP REST Security Cheat Sheet): HSTS, nosniff, X-Frame-Options,
 * Referrer-Policy, CORP. Helmet's others guard HTML pages in browsers, and each costs a 401 flood.
 */
export const securityHeaders: RequestHandler = helmet({
  contentSecurityPolicy: false,
  crossOriginEmbedderPolicy: false,
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});

/**
 * The headers `securityHeaders` sets, for the replies written past Express (the HTTP parser's):
 * asked of helmet itself, once, so that every reply carries the same.
 */
export const SECURITY_HEADER_FIELDS: Readonly<Record<string, string>> = (() => {
  const fields: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: unknown) => (fields[name] = String(value)),
    removeHeader: () => undefined,
  };
  securityHeaders({} as never, response as never, () => undefined);
  return fields;
})();
