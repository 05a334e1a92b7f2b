import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import { accessLog } from './access-log';

/** Runs one request through the middleware, ends it, and returns the lines it wrote. */
function logRequest(
  level: string,
  reply: { statusCode: number; writableFinished: boolean },
  originalUrl = '/v1/users?limit=5',
): Record<string, unknown>[] {
  const lines: string[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(line) });
  const request = Object.assign(new EventEmitter(), {
    id: 'r-1',
    method: 'GET',
    url: originalUrl,
    originalUrl,
    headers: { authorization: 'Bearer secret' },
  }) as unknown as IncomingMessage;
  const response = Object.assign(new EventEmitter(), reply) as unknown as ServerResponse;
  const next = jest.fn();
  accessLog(logger)(request, response, next);
  expect(next).toHaveBeenCalledTimes(1);
  expect(lines).toEqual([]);
  response.emit('close');
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('accessLog (pino-http)', () => {
  it('writes one line when the response ends, without the query string or headers', () => {
    const [line, ...rest] = logRequest('info', { statusCode: 200, writableFinished: true });
    expect(rest).toEqual([]);
    expect(line).toMatchObject({
      level: 30,
      req: { id: 'r-1', method: 'GET', path: '/v1/users' },
      res: { status: 200 },
      msg: 'GET 200',
    });
    expect(typeof line.responseTime).toBe('number');
    expect(line).not.toHaveProperty('aborted');
    expect(JSON.stringify(line)).not.toContain('secret');
  });

  it('marks a reply the client did not wait for', () => {
    const [line] = logRequest('info', { statusCode: 200, writableFinished: false });
    expect(line).toMatchObject({ aborted: true });
  });

  it('writes 5xx at error level without an error of its own, and only what the level lets through', () => {
    const [line] = logRequest('info', { statusCode: 503, writableFinished: true });
    expect(line).toMatchObject({ level: 50, msg: 'GET 503', res: { status: 503 } });
    expect(line).not.toHaveProperty('err');
    expect(logRequest('warn', { statusCode: 200, writableFinished: true })).toEqual([]);
    expect(logRequest('warn', { statusCode: 500, writableFinished: true })).toHaveLength(1);
  });

  it('blanks a token pasted into the path', () => {
    const token = `lsk_${'A'.repeat(43)}`;
    const [line] = logRequest('info', { statusCode: 404, writableFinished: true }, `/${token}`);
    expect(JSON.stringify(line)).not.toContain(token);
  });
});
