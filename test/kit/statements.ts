import type { DataSource } from 'typeorm';

/**
 * Watches the SQL a data source's driver is handed (every listing statement passes through
 * `escapeQueryWithParameters` on its way to the database), to count what a request ran.
 */
export function watchStatements(dataSource: DataSource) {
  const escape = jest.spyOn(dataSource.driver, 'escapeQueryWithParameters');
  const statements = () =>
    escape.mock.results
      .filter((result) => result.type === 'return')
      .map((result) => (result.value as [string, unknown[]])[0]);
  return {
    statements,
    /** Full counts of a listing's total: a COUNT with no bound on ids above a counted maximum. */
    fullCounts: () =>
      statements().filter((sql) => /^SELECT COUNT\(\*\) AS total/.test(sql) && !/t\.id >/.test(sql))
        .length,
    /** The named parameters of each statement (`bucket_edge`: a positioned page). */
    parameterNames: () =>
      escape.mock.calls.map((call) => Object.keys((call[1] as Record<string, unknown>) ?? {})),
    stop: () => escape.mockRestore(),
  };
}
