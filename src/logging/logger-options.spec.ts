import { Writable } from 'node:stream';
import pino from 'pino';
import { QueryFailedError } from 'typeorm';
import { loadConfig } from '../config/app-config';
import { buildLoggerOptions } from './logger-options';

describe('logger options', () => {
  it("keeps a failed statement's values out of the error it logs, and its SQL shape in", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = pino(buildLoggerOptions(loadConfig({}), true), destination);
    const hash = 'c2VjcmV0LXRva2VuLWhhc2gtdmFsdWUtMTIzNDU2Nzg5';
    const driverError = Object.assign(new Error("Table 'x.api_tokens' doesn't exist"), {
      sql: `SELECT id FROM api_tokens WHERE token_hash = '${hash}'`,
    });
    const failed = new QueryFailedError(
      'SELECT id FROM api_tokens WHERE token_hash = ?',
      [hash],
      driverError,
    );
    logger.error({ err: failed }, 'unhandled error');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(hash);
    expect(JSON.parse(lines[0]).err.query).toBe('SELECT id FROM api_tokens WHERE token_hash = ?');
  });
});
