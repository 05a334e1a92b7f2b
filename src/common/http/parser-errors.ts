import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { requestIdOf } from './request-id.middleware';
import { SECURITY_HEADER_FIELDS } from './security-headers';
import { reasonPhrase } from '../problem-details/reason-phrase';

/** What Node's HTTP parser refuses, by error code; anything else it refuses answers 400. */
const parserErrors = (
  maxHeaderBytes: number,
): Record<string, [status: number, detail: string]> => ({
  HPE_HEADER_OVERFLOW: [431, `The request line and headers exceed ${maxHeaderBytes} bytes.`],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'The request body is larger than this service takes.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time.'],
  HPE_INVALID_URL: [
    400,
    'The URL has a character HTTP does not allow there: percent-encode it (Ł as %C5%81, a space as %20).',
  ],
});
const MALFORMED: [number, string] = [400, 'The request is not valid HTTP/1.1.'];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A problem+json body for a request the app never saw, under `requestId` (else a new one). */
function problemOf(status: number, detail: string, requestId: string = randomUUID()) {
  const title = reasonPhrase(status);
  // The request's target is not echoed: the parser's chunk may hold other bytes than its line.
  const body = JSON.stringify({
    type: 'about:blank',
    title,
    status,
    detail,
    // A client's own request id is no UUID: the occurrence then gets one of its own.
    instance: `urn:uuid:${UUID.test(requestId) ? requestId : randomUUID()}`,
    request_id: requestId,
  });
  return { requestId, title, body };
}

/** A problem written on the socket itself, the app never having seen the request; it closes. */
const rawReply = (status: number, title: string, requestId: string, body: string, headers = '') =>
  `HTTP/1.1 ${status} ${title}\r\n${headers}Content-Type: application/problem+json\r\n` +
  `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n` +
  Object.entries(SECURITY_HEADER_FIELDS)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('') +
  'Cache-Control: no-store\r\nConnection: close\r\n\r\n' +
  body;

/**
 * Answers what Node's HTTP parser refuses (the request never reaches the app) with problem+json
 * and a request id, where Node writes a bare status line; on a socket whose earlier response is
 * still being sent, nothing can be answered: it is closed, as Node does.
 */
export function answerParserErrors(server: Server, maxHeaderBytes: number): void {
  const logger = new Logger('HTTP');
  const answers = parserErrors(maxHeaderBytes);
  // A socket's responses finish in order: while its latest is unfinished, one is being sent. (An
  // idle keep-alive socket keeps its last response until it closes.)
  const latestResponse = new WeakMap<Duplex, ServerResponse>();
  server.on('request', ({ socket }: IncomingMessage, response: ServerResponse) => {
    latestResponse.set(socket, response);
  });
  // An `Expect` other than 100-continue, which Node would answer with a bare 417 itself.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const { requestId, body } = problemOf(
      417,
      'The Expect header asks for something this service does not do; send the request without it.',
      requestIdOf(request),
    );
    logger.warn(`417 for Expect: ${String(request.headers.expect)}, request id ${requestId}`);
    response.writeHead(417, {
      'Content-Type': 'application/problem+json',
      'Content-Length': Buffer.byteLength(body),
      'X-Request-Id': requestId,
      ...SECURITY_HEADER_FIELDS,
      'Cache-Control': 'no-store',
    });
    response.end(body);
  });
  // CONNECT, which Node hands here rather than to the app (unheard, it drops the socket unanswered):
  // the 405 every other write method gets.
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    const { requestId, title, body } = problemOf(
      405,
      'CONNECT is not allowed here: this service is read-only.',
      requestIdOf(request),
    );
    logger.warn(`405 for CONNECT, request id ${requestId}`);
    socket.end(rawReply(405, title, requestId, body, 'Allow: GET, HEAD\r\n'), () =>
      socket.destroy(),
    );
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    try {
      const sending = latestResponse.get(socket)?.writableFinished === false;
      if (error.code === 'ECONNRESET' || !socket.writable || sending) {
        socket.destroy();
        return;
      }
      const [status, detail] = answers[error.code ?? ''] ?? MALFORMED;
      const { requestId, title, body } = problemOf(status, detail);
      logger.warn(
        `${status} from the HTTP parser (${error.code ?? 'unknown'}), request id ${requestId}`,
      );
      socket.end(rawReply(status, title, requestId, body), () => socket.destroy());
    } catch {
      socket.destroy();
    }
  });
}
