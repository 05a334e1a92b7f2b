import { HttpStatus } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';
import { answerParserErrors } from './parser-errors';
import { sendProblem } from '../problem-details/problem-details.filter';

/** Request line plus headers; more answers 431 before any route (`answerParserErrors`). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** No route takes a body; anything bigger than this is refused unread. */
export const MAX_BODY_BYTES = 1024;

/**
 * Limits of the HTTP server itself: header size and count, and how long a client may take to
 * send its headers and its whole request (slow-loris). Read per connection, so setting them
 * before `listen` (or before supertest's first request) is enough.
 */
export function applyServerLimits(server: Server): void {
  // Not in the type definitions, but read by Node for every new connection.
  (server as Server & { maxHeaderSize?: number }).maxHeaderSize = MAX_HEADER_BYTES;
  server.maxHeadersCount = 100; // named in parser-errors' 431
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  answerParserErrors(server, MAX_HEADER_BYTES);
}

/**
 * The service reads no request body: one larger than MAX_BODY_BYTES, or of unknown length
 * (chunked), answers 413 before any parser reads it.
 */
export function requestBodyLimitMiddleware(
  request: Request,
  response: Response,
  next: NextFunction,
): void {
  const length = request.headers['content-length'];
  const chunked = request.headers['transfer-encoding'] !== undefined;
  if (chunked || (length !== undefined && !(Number(length) <= MAX_BODY_BYTES))) {
    response.setHeader('Connection', 'close');
    sendProblem(
      request,
      response,
      HttpStatus.PAYLOAD_TOO_LARGE,
      `This service takes no request body (at most ${MAX_BODY_BYTES} bytes are tolerated).`,
    );
    return;
  }
  next();
}
