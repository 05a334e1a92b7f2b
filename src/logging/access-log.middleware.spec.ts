import { EventEmitter } from 'node:events';
import type { NextFunction, Request, Response } from 'express';
import pino from 'pino';
import { accessLogMiddleware } from './access-log.middleware';

/** Runs one request through the middleware and returns the lines it wrote. */
function logRequest(
  level: string,
  reply: { statusCode: number; writableFinished: boolean },
  originalUrl = '/v1/users?limit=5',
): Record<string, unknown>[] {
  const lines: string[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(line) });
  const request = { id: 'r-1', method: 'GET', originalUrl } as Request;
  const response = Object.assign(new EventEmitter(), reply) as unknown as Response;
  const next = jest.fn() as NextFunction;
  accessLogMiddleware(logger)(request, response, next);
  expect(next).toHaveBeenCalledTimes(1);
  expect(lines).toEqual([]);
  response.emit('close');
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('accessLogMiddleware', () => {
  it('writes one line when the response ends, without the query string', () => {
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
  });

  it('marks a reply the client did not wait for', () => {
    const [line] = logRequest('info', { statusCode: 200, writableFinished: false });
    expect(line).toMatchObject({ aborted: true });
  });

  it('writes 5xx at error level, and only what the level lets through', () => {
    expect(logRequest('info', { statusCode: 503, writableFinished: true })).toEqual([
      expect.objectContaining({ level: 50, msg: 'GET 503' }),
    ]);
    expect(logRequest('warn', { statusCode: 200, writableFinished: true })).toEqual([]);
    expect(logRequest('warn', { statusCode: 500, writableFinished: true })).toHaveLength(1);
  });

  it('blanks a token pasted into the path', () => {
    const token = `lsk_${'A'.repeat(43)}`;
    const [line] = logRequest('info', { statusCode: 404, writableFinished: true }, `/${token}`);
    expect(JSON.stringify(line)).not.toContain(token);
  });
});
