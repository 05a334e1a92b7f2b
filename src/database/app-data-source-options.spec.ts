import { Logger } from '@nestjs/common';
import { DatabaseLogger } from './app-data-source-options';

describe('DatabaseLogger', () => {
  const timeout = Object.assign(new Error('Query inactivity timeout'), {
    code: 'PROTOCOL_SEQUENCE_TIMEOUT',
  });
  let warnings: string[];

  beforeEach(() => {
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
  });
  afterEach(() => jest.restoreAllMocks());

  it('notes a query the client timed out as slow, also when TypeORM did not', () => {
    const logger = new DatabaseLogger();
    logger.logQuery();
    logger.logQueryError(timeout, 'SELECT 1');
    expect(warnings).toEqual(['slow query (timed out): SELECT 1']);
  });

  it('notes it once when TypeORM noted it as slow first', () => {
    const logger = new DatabaseLogger();
    logger.logQuery();
    logger.logQuerySlow(3001, 'SELECT 1');
    logger.logQueryError(timeout, 'SELECT 1');
    expect(warnings).toEqual(['slow query (3001 ms): SELECT 1']);
  });

  it('leaves other failures to the error reply', () => {
    const logger = new DatabaseLogger();
    logger.logQuery();
    logger.logQueryError(Object.assign(new Error('gone'), { code: 'ECONNREFUSED' }), 'SELECT 1');
    expect(warnings).toEqual([]);
  });
});
