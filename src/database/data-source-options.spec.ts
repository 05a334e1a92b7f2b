import { loadConfig } from '../config/app-config';
import { buildDataSourceOptions } from './data-source-options';

describe('buildDataSourceOptions on MySQL', () => {
  const options = buildDataSourceOptions(
    loadConfig({ DATABASE_URL: 'mysql://root@127.0.0.1:3306/test' }),
  ) as { extra?: Record<string, unknown> };

  it("keeps mysql2's prepared-statement cache small: every query is sent as text", () => {
    // mysql2's default (16,000) allocates four arrays of that length per pooled connection.
    expect(options.extra?.maxPreparedStatements).toBeLessThanOrEqual(16);
  });

  it('turns off the stack trace mysql2 would capture for every query', () => {
    expect(options.extra?.trace).toBe(false);
  });
});
