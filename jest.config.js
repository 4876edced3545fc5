/** One Jest run over every workspace; TypeScript is compiled by SWC (no type-check: `pnpm lint` does that). */
module.exports = {
  testEnvironment: 'node',
  // Workspace packages resolve to their TypeScript sources (package.json "exports" condition).
  testEnvironmentOptions: { customExportConditions: ['node', 'node-addons', '@feed/source'] },
  roots: ['<rootDir>/apps', '<rootDir>/packages', '<rootDir>/tools', '<rootDir>/infra', '<rootDir>/test'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }] },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
