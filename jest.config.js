/** @type {import('jest').Config} */
const transform = { '^.+\\.ts$': ['@swc/jest'] };

module.exports = {
  // A global option: Jest ignores it inside `projects` (the e2e entry below alone left every test
  // at the 5 s default, too short for boots and CLI runs on a busy 2-core CI machine).
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
