/** @type {import('jest').Config} */
const transform = { '^.+\\.ts$': ['@swc/jest'] };

module.exports = {
  // Jest reads testTimeout from the global config only; set inside a project it is ignored (the
  // e2e suites then ran with the 5 s default and timed out on a busy machine).
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/unit/**/*.spec.ts'],
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'],
    },
  ],
};
