/** @type {import('jest').Config} */
const transform = { '^.+\\.ts$': ['@swc/jest'] };

module.exports = {
  // Here, not per project: jest ignores `testTimeout` in a project's config, so e2e hooks that
  // boot apps or processes got the 5 s default and failed on a busy machine.
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
