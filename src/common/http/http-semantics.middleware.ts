import { HttpStatus } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { sendProblem } from '../problem-details/problem-details.filter';

export const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * Answers what routing alone would get wrong: 400 for a path that is not valid percent-encoding
 * (no route could match it, but it is the request that is wrong, not the address), 405 (with
 * `Allow`) for any write method on a route that exists, since the service writes nothing. (406 is
 * the listings' own, negotiated after authentication: `ListingFormat`.) `knownPaths` (in lower case) is filled once the routes are registered.
 */
export function httpSemanticsMiddleware(
  knownPaths: ReadonlySet<string>,
  /** Whether a GET of the path (as sent) is answered with a static file. */
  servesFile: (path: string) => boolean = () => false,
  /** With CORS on, what answers a preflight of a path served (any other OPTIONS is a write's 405 or 404). */
  preflight?: RequestHandler,
) {
  return (request: Request, response: Response, next: NextFunction) => {
    if (!isDecodablePath(request.path)) {
      sendProblem(
        request,
        response,
        HttpStatus.BAD_REQUEST,
        'The request path is not valid percent-encoded UTF-8.',
      );
      return;
    }
    // As routing matches: whatever the letters' case.
    const path = normalizePath(request.path).toLowerCase();
    const known = knownPaths.has(path) || servesFile(request.path);
    if (preflight && known && isPreflight(request)) {
      preflight(request, response, next);
      return;
    }
    if (!READ_METHODS.has(request.method) && known) {
      sendProblem(
        request,
        response,
        HttpStatus.METHOD_NOT_ALLOWED,
        `${request.method} is not allowed here: this service is read-only.`,
        { headers: { Allow: 'GET, HEAD' } },
      );
      return;
    }
    next();
  };
}

/** A browser's CORS preflight: OPTIONS from an origin, naming the method it would send. */
const isPreflight = (request: Request): boolean =>
  request.method === 'OPTIONS' &&
  request.headers.origin !== undefined &&
  request.headers['access-control-request-method'] !== undefined;

function isDecodablePath(path: string): boolean {
  if (!path.includes('%')) return true;
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

export function normalizePath(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
