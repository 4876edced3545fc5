// ESLint (typescript-eslint): package boundaries, the layers, no casts over client types, and the
// type-aware rules that catch a promise nobody awaits or one passed where a callback is expected.
import tseslint from 'typescript-eslint';

/** Deep imports: a package is used through its public entry (package.json "exports"), nothing else. */
const deepImports = [
  { group: ['@feed/*/*'], message: 'Import the package through its public entry (@feed/<name>).' },
  { group: ['**/apps/*/src', '**/apps/*/src/**', '**/packages/*/src', '**/packages/*/src/**'], message: 'Import another package through its public entry (@feed/<name>), not its files.' },
];

/**
 * The layers, inner to outer: domain <- storage <- apps <- tools. A layer imports only the ones
 * inside it (and the shared leaf packages: config, logger, telemetry, http, lifecycle); the two
 * apps do not import each other; product code never imports tools/ or test/.
 */
const outerOf = {
  domain: ['@feed/storage', '@feed/api', '@feed/worker', '@feed/demo-data', '@feed/embedded-mongo'],
  storage: ['@feed/api', '@feed/worker', '@feed/demo-data', '@feed/embedded-mongo'],
  api: ['@feed/worker', '@feed/demo-data', '@feed/embedded-mongo'],
  worker: ['@feed/api', '@feed/demo-data', '@feed/embedded-mongo'],
};
const notTools = { group: ['**/tools/**', '**/test/**'], message: 'Product code does not import tools/ or test/ (the layers: domain <- storage <- apps <- tools).' };
const layer = (name) => [
  ...deepImports,
  notTools,
  { group: outerOf[name], message: `Layering: ${name} does not import an outer layer (domain <- storage <- apps <- tools).` },
];

/**
 * Storage is the only door to Redis (issue 50): the apps call its named operations and factories;
 * they never send a command themselves, hold the client's type or load a script.
 */
const storageDoor = [
  { name: 'redis', message: 'Apps reach Redis through @feed/storage\'s named operations, not the client package.' },
  { name: 'ioredis', message: 'Apps get ioredis connections from a named storage factory (bullConnectionFactory).' },
  { name: '@feed/storage', importNames: ['runScript', 'loadScript', 'Redis'], message: 'Apps call named storage operations (a Lease, redisClockMs, ...), not scripts or the raw client.' },
  {
    name: '@feed/storage',
    // storage's free functions that take the raw client: the apps call their stores' methods instead.
    importNames: [
      'addVariantStats', 'admitReadoutAction', 'changeRolloutOverRamp', 'claimPositions', 'commit', 'countUsersWithOffset', 'deleteKeysWithPrefix', 'makeCurrent',
      'migrateRampKey', 'observeRollout', 'pauseStoredRamp', 'RampCommandDeps', 'readGuest', 'readHeldVersion', 'readMeta', 'readOffset', 'readQueueRange', 'readRamp',
      'readRecordedScores', 'readRingVersion', 'readRolloutOverride', 'readStepReadout', 'readVariantStats', 'recordFingerprint', 'recordGuestView', 'registerGuest',
      'removeFingerprint', 'resumeStoredRamp', 'startStoredRamp', 'unclaimPositions',
    ],
    message: 'This function takes the raw client: call the named operation of a store (VersionStore, RolloutStore, BuildStore, UserHistory, ...) the composition root hands in.',
  },
];
/** The composition roots: only they connect, hold the client (by `typeof connectRedis`, too) and build the stores from it. */
const compositionRoots = ['apps/api/src/app.ts', 'apps/api/src/main.ts', 'apps/worker/src/main.ts'];
const rootsOnly = {
  name: '@feed/storage',
  importNames: ['connectRedis', 'closeRedis', 'newDeviceLimiter', 'readoutStore', 'redisClockMs', 'storeHealth'],
  message: 'Only a composition root (app.ts, main.ts) connects to Redis and builds stores from the client; take the store it hands in.',
};

/** `x as unknown as T` hides a type error; `client as Redis` hid the cluster client's missing methods. */
const casts = [
  { selector: 'TSAsExpression > TSAsExpression', message: 'No double casts: fix the type (see packages/storage/src/redis-client.ts for the client interface).' },
  {
    selector: "TSAsExpression > TSTypeReference[typeName.name=/^(Redis|RedisClientType|RedisClusterType|Cluster|IORedis|Connection)$/]",
    message: 'No casts to client types: both clients must satisfy the interface.',
  },
];

export default tseslint.config(
  // Stryker's sandbox copies of the tree (pnpm test:mutation) and its reports are not the project's sources.
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', '.stryker-tmp/**', 'reports/**'] },
  {
    files: ['**/*.ts', '**/*.mts'],
    languageOptions: {
      parser: tseslint.parser,
      // Type information for the rules below: one program over the root tsconfig.json (the per-package ones would each build their own).
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      'no-restricted-imports': ['error', { patterns: deepImports }],
      'no-restricted-syntax': ['error', ...casts],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  { files: ['packages/domain/src/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: layer('domain') }] } },
  { files: ['packages/storage/src/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: layer('storage') }] } },
  { files: ['apps/api/src/**/*.ts'], ignores: compositionRoots, rules: { 'no-restricted-imports': ['error', { paths: [...storageDoor, rootsOnly], patterns: layer('api') }] } },
  { files: ['apps/worker/src/**/*.ts'], ignores: compositionRoots, rules: { 'no-restricted-imports': ['error', { paths: [...storageDoor, rootsOnly], patterns: layer('worker') }] } },
  { files: compositionRoots.filter((f) => f.startsWith('apps/api/')), rules: { 'no-restricted-imports': ['error', { paths: storageDoor, patterns: layer('api') }] } },
  { files: compositionRoots.filter((f) => f.startsWith('apps/worker/')), rules: { 'no-restricted-imports': ['error', { paths: storageDoor, patterns: layer('worker') }] } },
);
