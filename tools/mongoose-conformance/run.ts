/**
 * The embedded MongoDB server measured with mongoose's own tests: a CRUD subset of mongoose's test
 * files (named below) run by mocha against a fresh embedded server, and the pass rate printed.
 * `MONGOOSE_SRC=/path/to/mongoose pnpm test:mongoose [file ...]`: a checkout of mongoose's repository
 * (the lockfile's version, or the nearest tag one has) with its dev dependencies installed
 * (`npm install --ignore-scripts`: no MongoDB binary is needed). A developer's command, not CI's.
 * Tests mongoose itself skips (replica sets, transactions) count neither way.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedMongo } from '@feed/embedded-mongo';

const SUBSET = [
  'test/model.test.js',
  'test/query.test.js',
  'test/aggregate.test.js',
  'test/model.updateOne.test.js',
  'test/model.insertMany.test.js',
  'test/model.indexes.test.js',
  'test/query.cursor.test.js',
  'test/timestamps.test.js',
];

interface MochaReport {
  stats: { passes: number; failures: number; pending: number };
  failures: Array<{ fullTitle: string; file: string; err: { message?: string } }>;
}

async function main(): Promise<void> {
  const source = process.env.MONGOOSE_SRC;
  const mocha = source && path.join(source, 'node_modules/mocha/bin/mocha.js');
  if (!source || !existsSync(mocha!)) throw new Error('MONGOOSE_SRC must name a mongoose checkout with its dev dependencies installed (node_modules/mocha)');
  const version = (JSON.parse(readFileSync(path.join(source, 'package.json'), 'utf8')) as { version: string }).version;
  const files = process.argv.length > 2 ? process.argv.slice(2) : SUBSET;
  const mongo = await startEmbeddedMongo();
  const output = path.join(mkdtempSync(path.join(tmpdir(), 'mongoose-conformance-')), 'report.json');
  try {
    // --no-config: mongoose's .mocharc starts mongodb-memory-server; its test/common.js reads the URI.
    const args = [mocha!, '--no-config', '--exit', '--timeout', '10000', '--reporter', 'json', '--reporter-option', `output=${output}`, ...files];
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, args, { cwd: source, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, MONGOOSE_TEST_URI: `${mongo.uri}/mongoose_test` } });
      child.on('exit', resolve);
    });
    if (!existsSync(output)) throw new Error(`mocha wrote no report (exit ${code})`);
    const report = JSON.parse(readFileSync(output, 'utf8')) as MochaReport;
    for (const failure of report.failures) console.log(`FAIL ${failure.file ? path.relative(source, failure.file) : '?'} :: ${failure.fullTitle}\n     ${(failure.err.message ?? '').split('\n')[0].slice(0, 200)}`);
    const { passes, failures, pending } = report.stats;
    const rate = passes + failures > 0 ? (100 * passes) / (passes + failures) : 0;
    console.log(`mongoose ${version}, ${files.length} files: ${passes} passed, ${failures} failed, ${pending} skipped by mongoose: ${rate.toFixed(1)} % pass`);
  } finally {
    await mongo.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
