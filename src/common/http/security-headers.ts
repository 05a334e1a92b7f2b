import type { NextFunction, Request, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * The response headers helmet sets with these options, worked out once: with the content security
 * policy off, every one of them is a constant, yet helmet's middleware runs a dozen small
 * middleware per request to set them.
 */
export function securityHeadersOf(options: HelmetOptions): ReadonlyMap<string, string> {
  if (options.contentSecurityPolicy !== false) {
    // A policy may carry per-request values (nonces): it cannot be worked out once.
    throw new Error('securityHeadersOf needs contentSecurityPolicy: false');
  }
  const headers = new Map<string, string>();
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      headers.set(name, String(value));
    },
    removeHeader: (name: string) => headers.delete(name),
  };
  let done = false;
  helmet(options)({} as never, recorder as never, (error?: unknown) => {
    if (error) throw error;
    done = true;
  });
  if (!done) throw new Error('helmet did not set its headers synchronously');
  return headers;
}

/** Sets helmet's headers (for these options) on every reply, in one step. */
export function securityHeadersMiddleware(options: HelmetOptions) {
  const headers = [...securityHeadersOf(options)];
  return (_request: Request, response: Response, next: NextFunction): void => {
    for (const [name, value] of headers) response.setHeader(name, value);
    next();
  };
}
