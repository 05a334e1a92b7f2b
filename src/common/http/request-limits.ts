import { HttpStatus } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { redactTokens } from '../auth/token-redaction';
import { sendProblem } from '../problem-details/problem-details.filter';

/** Request line plus headers; more answers 431 before any route (`answerClientError`). */
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
  server.maxHeadersCount = 100;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.on('clientError', answerClientError);
}

/** What Node's parser refuses, by error code; anything else it refuses is a malformed request. */
const CLIENT_ERRORS: Record<string, [status: number, detail: string]> = {
  HPE_HEADER_OVERFLOW: [431, `The request line and headers exceed ${MAX_HEADER_BYTES} bytes.`],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time.'],
  HPE_HEADER_TIMEOUT: [408, 'The request headers were not received in time.'],
  HPE_INVALID_URL: [
    400,
    'The URL has a character HTTP does not allow there: percent-encode it (Ł as %C5%81, a space as %20).',
  ],
};
const MALFORMED: [number, string] = [400, 'The request is not valid HTTP/1.1.'];
/** The most characters of a refused request's target echoed as its problem's `instance`. */
const INSTANCE_CHARS = 2048;

/**
 * A request Node's HTTP parser refuses never reaches the app: it gets a problem+json reply with a
 * request id on the socket itself (Node's own is a bare status line), then the socket closes.
 */
function answerClientError(
  error: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Duplex,
): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, detail] = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
  const requestId = randomUUID();
  const title = STATUS_CODES[status] ?? 'Error';
  // The request line's target as sent, cut short, what is not printable ASCII percent-encoded.
  const target = error.rawPacket?.toString('utf8').split('\r\n', 1)[0].split(' ')[1] ?? '';
  const instance = target
    .slice(0, INSTANCE_CHARS)
    .replace(/[^\x21-\x7e]/gu, (char) => encodeURIComponent(char));
  const problem = { type: 'about:blank', title, status, detail, instance, request_id: requestId };
  const body = redactTokens(JSON.stringify(problem));
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
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
