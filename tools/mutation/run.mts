/**
 * `pnpm test:mutation [--only <modules>]`: StrykerJS over the project's own Jest suite, one run per
 * module, each with the fast test files that guard it, in a sandbox copy of the tree (the
 * workspace packages are mapped to the sandbox's sources: pnpm's links would lead back to the
 * work tree). Results are kept per module under reports/mutation/, so a re-run tests only what
 * changed (incremental). Prints each module's score against its goal and exits non-zero below it.
 */

import { Command, InvalidArgumentError } from 'commander';
import { createRequire } from 'node:module';
import { Stryker } from '@stryker-mutator/core';

type PartialStrykerOptions = NonNullable<ConstructorParameters<typeof Stryker>[0]>;

// Stryker's Jest plugin loads the test environment from its own folder, where pnpm's strict
// layout has no jest-environment-node: name it by absolute path.
const testEnvironment = createRequire(import.meta.url).resolve('jest-environment-node');

interface MutationModule {
  /** Files whose mutants count towards the score. */
  mutate: string[];
  /** The fast tests that guard them (Jest testMatch globs). */
  tests: string[];
  /** Mutation score (killed / killed + survived + no coverage) the suite must reach, in percent. */
  goal: number;
  /** Whether the tests need the suite's MongoDB and Redis (Jest's global set-up). */
  services: boolean;
}

const MODULES: Record<string, MutationModule> = {
  domain: {
    mutate: ['packages/domain/src/**/*.ts', '!packages/domain/src/index.ts', '!packages/domain/src/types/**'],
    tests: ['<rootDir>/packages/domain/test/**/*.test.ts'],
    goal: 85,
    services: false,
  },
  storage: {
    mutate: ['packages/storage/src/ring.ts', 'packages/storage/src/counters/**/*.ts', 'packages/storage/src/version-store.ts'],
    tests: ['<rootDir>/packages/storage/test/**/*.test.ts', '!**/video-indexes.test.ts'],
    goal: 75,
    services: true,
  },
  feed: {
    mutate: ['apps/api/src/feed/feed-service.ts', 'apps/api/src/feed/ring-claims.ts', 'apps/api/src/feed/ring-scan.ts', 'apps/api/src/feed/candidate-verdict.ts'],
    // admin-explain: explain reads the ring through the same scan (ring-scan.ts peekFrom, positions);
    // give-back: a queue read failing after its claim (ring-claims.ts's only test of that path).
    tests: ['<rootDir>/apps/api/test/feed.test.ts', '<rootDir>/apps/api/test/feed-*.test.ts', '<rootDir>/apps/api/test/admin-explain.test.ts', '<rootDir>/apps/api/test/give-back.test.ts'],
    goal: 70,
    services: true,
  },
};

function moduleList(value: string): string[] {
  const names = value.split(',');
  const unknown = names.filter((name) => !(name in MODULES));
  if (unknown.length) throw new InvalidArgumentError(`unknown module ${unknown.join(', ')}; the modules: ${Object.keys(MODULES).join(', ')}.`);
  return names;
}

function strykerOptions(name: string, module: MutationModule, concurrency: number): PartialStrykerOptions {
  return {
    mutate: module.mutate,
    testRunner: 'jest',
    plugins: ['@stryker-mutator/jest-runner'],
    jest: {
      configFile: 'jest.config.js',
      config: {
        testEnvironment,
        moduleNameMapper: {
          '^@feed/(api|worker)$': '<rootDir>/apps/$1/src/index.ts',
          '^@feed/([a-z-]+)$': '<rootDir>/packages/$1/src/index.ts',
        },
        testMatch: module.tests.filter((glob) => !glob.startsWith('!')),
        testPathIgnorePatterns: ['/node_modules/', ...module.tests.filter((glob) => glob.startsWith('!')).map((glob) => glob.slice(4).replace(/\*/g, '.*'))],
        ...(module.services ? {} : { globalSetup: null, globalTeardown: null }),
      },
      enableFindRelatedTests: false,
    },
    coverageAnalysis: 'perTest',
    incremental: true,
    incrementalFile: `reports/mutation/${name}.incremental.json`,
    concurrency,
    timeoutMS: 20_000,
    reporters: ['clear-text', 'progress'],
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    tempDirName: `.stryker-tmp/${name}`,
    cleanTempDir: true,
  };
}

async function main(): Promise<number> {
  const program = new Command('test:mutation')
    .description('Mutation testing (StrykerJS) of the modules below with the fast tests that guard them.')
    .option('--only <modules>', `comma-separated modules: ${Object.keys(MODULES).join(', ')}`, moduleList, Object.keys(MODULES))
    .option('--concurrency <n>', 'parallel Jest runners (1-8)', (value) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 8) throw new InvalidArgumentError('must be an integer from 1 to 8.');
      return n;
    }, 2)
    .parse();
  const { only, concurrency } = program.opts<{ only: string[]; concurrency: number }>();
  const rows: string[] = [];
  let belowGoal = 0;
  for (const name of only) {
    const module = MODULES[name];
    const started = Date.now();
    const results = await new Stryker(strykerOptions(name, module, concurrency)).runMutationTest();
    const killed = results.filter((r) => r.status === 'Killed' || r.status === 'Timeout').length;
    const counted = killed + results.filter((r) => r.status === 'Survived' || r.status === 'NoCoverage').length;
    const score = counted ? (100 * killed) / counted : 100;
    if (score < module.goal) belowGoal++;
    rows.push(`${name.padEnd(8)} ${score.toFixed(1).padStart(5)} %  goal ${module.goal} %  (${killed} killed of ${counted}, ${((Date.now() - started) / 1000).toFixed(0)} s)${score < module.goal ? '  BELOW GOAL' : ''}`);
  }
  console.log(`\nmutation scores (killed incl. timeouts / killed + survived + no coverage):\n${rows.join('\n')}`);
  return belowGoal ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(2);
  },
);
