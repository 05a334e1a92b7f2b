import { HttpStatus } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';
import { answerParserErrors } from './parser-errors';
import { sendProblem } from '../problem-details/problem-details.filter';

/** Request line plus headers; more answers 431 before any route (`answerParserErrors`). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** No route takes a body; anything bigger than this is refused unread. */
export const MAX_BODY_BYTES = 1024;
/** Header fields a request may carry; more answers 431 (`requestHeaderFieldsMiddleware`). */
export const MAX_HEADER_FIELDS = 100;

/**
 * Limits of the HTTP server itself: header size and count, and how long a client may take to
 * send its headers and its whole request (slow-loris). Read per connection, so setting them
 * before `listen` (or before supertest's first request) is enough.
 */
export function applyServerLimits(server: Server): void {
  // Not in the type definitions, but read by Node for every new connection.
  (server as Server & { maxHeaderSize?: number }).maxHeaderSize = MAX_HEADER_BYTES;
  // Past its count Node drops fields silently (a second Authorization among them): counted instead
  // by requestHeaderFieldsMiddleware, which answers 431; the byte limit bounds them meanwhile.
  server.maxHeadersCount = 0;
  // A request without Host is refused by requestHeaderFieldsMiddleware, as problem+json.
  (server as Server & { requireHostHeader?: boolean }).requireHostHeader = false;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  answerParserErrors(server, MAX_HEADER_BYTES);
}

/** RFC 3986's `host [":" port]`: an IP literal in brackets, or a registered name (maybe empty). */
const HOST_VALUE = /^(?:\[[\w.:~!$&'()*+,;=-]+\]|(?:[\w.~!$&'()*+,;=-]|%[\da-f]{2})*)(?::\d*)?$/i;

/**
 * 431 past MAX_HEADER_FIELDS header fields; 400 for an HTTP/1.1 request without `Host` or with
 * several or an invalid one (RFC 9112 3.2), and for more than one `Authorization` field (Node
 * keeps the first; a proxy in front may read another): before the rate limit reads the token.
 */
export function requestHeaderFieldsMiddleware(
  request: Request,
  response: Response,
  next: NextFunction,
): void {
  const { rawHeaders } = request;
  if (rawHeaders.length / 2 > MAX_HEADER_FIELDS) {
    sendProblem(
      request,
      response,
      431, // Request Header Fields Too Large (not in HttpStatus)
      `The request carries more than ${MAX_HEADER_FIELDS} header fields.`,
    );
    return;
  }
  const refused = headerFieldsRefusal(request);
  if (refused) {
    sendProblem(request, response, HttpStatus.BAD_REQUEST, refused);
    return;
  }
  next();
}

/** Why the request's Host or Authorization fields are refused (one pass over them), if they are. */
function headerFieldsRefusal({ rawHeaders, httpVersion, headers }: Request): string | undefined {
  let [authorizations, hosts] = [0, 0];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    // By length first: every request passes here, and few names are that long.
    const name = rawHeaders[i];
    if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++;
    else if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
  }
  if (hosts > 1) return 'The request carries more than one Host header.';
  if (hosts === 0 && httpVersion === '1.1') return 'An HTTP/1.1 request must carry a Host header.';
  if (hosts === 1 && !HOST_VALUE.test(headers.host ?? '')) {
    return 'The Host header is not a host with an optional port (RFC 9110 7.2).';
  }
  if (authorizations > 1) {
    return 'The request carries more than one Authorization header; send exactly one.';
  }
  return undefined;
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
