// ESLint (typescript-eslint): package boundaries and no casts over client types.
import tseslint from 'typescript-eslint';

/** Deep imports: a package is used through its public entry (package.json "exports"), nothing else. */
const deepImports = [
  { group: ['@feed/*/*'], message: 'Import the package through its public entry (@feed/<name>).' },
  { group: ['**/apps/*/src', '**/apps/*/src/**', '**/packages/*/src', '**/packages/*/src/**'], message: 'Import another package through its public entry (@feed/<name>), not its files.' },
];

/** `x as unknown as T` hides a type error; `client as Redis` hid the cluster client's missing methods. */
const casts = [
  { selector: 'TSAsExpression > TSAsExpression', message: 'No double casts: fix the type (see packages/storage/src/redis-client.ts for the client interface).' },
  {
    selector: "TSAsExpression > TSTypeReference[typeName.name=/^(Redis|RedisClientType|RedisClusterType|Cluster|IORedis|Connection)$/]",
    message: 'No casts to client types: both clients must satisfy the interface.',
  },
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      'no-restricted-imports': ['error', { patterns: deepImports }],
      'no-restricted-syntax': ['error', ...casts],
    },
  },
);
