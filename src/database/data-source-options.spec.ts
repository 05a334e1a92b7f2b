import { loadConfig } from '../config/app-config';
import { buildDataSourceOptions } from './data-source-options';

describe('buildDataSourceOptions on MySQL', () => {
  const options = buildDataSourceOptions(
    loadConfig({ DATABASE_URL: 'mysql://root@127.0.0.1:3306/test' }),
  ) as { extra?: Record<string, unknown> };

  const extraFor = (env: Record<string, string>) =>
    (
      buildDataSourceOptions(
        loadConfig({ DATABASE_URL: 'mysql://root@127.0.0.1:3306/test', ...env }),
      ) as { extra?: Record<string, unknown> }
    ).extra;

  it("sizes mysql2's prepared-statement cache by DB_PREPARED_STATEMENTS, not its 16,000", () => {
    // mysql2's default (16,000) allocates four arrays of that length per pooled connection.
    expect(options.extra?.maxPreparedStatements).toBe(64);
    expect(extraFor({ DB_PREPARED_STATEMENTS: '12' })?.maxPreparedStatements).toBe(12);
    // mysql2 reads 0 as its default; with nothing prepared, one slot is all it needs.
    expect(extraFor({ DB_PREPARED_STATEMENTS: '0' })?.maxPreparedStatements).toBe(1);
  });

  it('turns off the stack trace mysql2 would capture for every query', () => {
    expect(options.extra?.trace).toBe(false);
  });
});
