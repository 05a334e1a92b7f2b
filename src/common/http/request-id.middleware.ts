import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { redactTokens } from '../auth/token-redaction';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id: the client's `X-Request-Id` when it is a sane value (not one of our
 * tokens), else a new UUID. The id is echoed on the reply, logged, and put in problem bodies.
 */
export function requestIdMiddleware(request: Request, response: Response, next: NextFunction) {
  const id = requestIdOf(request);
  request.id = id;
  response.setHeader('X-Request-Id', id);
  next();
}

/** The client's `X-Request-Id` when it is a sane value (not one of our tokens), else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  const sane =
    typeof incoming === 'string' &&
    ACCEPTABLE_ID.test(incoming) &&
    redactTokens(incoming) === incoming;
  return sane ? incoming : randomUUID();
}
