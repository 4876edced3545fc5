/**
 * A bug on the worker's admin pages is visible (D5): answered 500 (a store that is down stays a
 * 503), and logged at error level with its message, its stack and the request id, on the
 * inspector and on the job dashboard (bull-board) alike.
 */
import type { Server } from 'node:http';
import request, { withInjectedFaults } from '../../../test/support/contract';
import { configureLogger, createLogger, logger } from '@feed/logger';
import { videoModel } from '@feed/storage';
import { createWorkerApp, DASHBOARD_PATH, INSPECTOR_PATH } from '../src/app';
import { workerStores } from './support/worker-app-under-test';
import { startBuildQueue } from '../src/jobs/build-queue';
import { bullConnectionFactory } from '../src/jobs/bull-connection';
import { createWorkerMetrics } from '../src/metrics';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';
import { waitUntil } from '../../../tools/support/processes';

const s = useTestServices('admin_errors');
let server: Server;
let lines: Array<Record<string, unknown>>;

/** The worker with one bug injected on each admin surface: a config read and a queue call that throw TypeErrors. */
beforeEach(async () => {
  const jobs = await startBuildQueue({ connection: bullConnectionFactory(s.config), prefix: s.keys.bullPrefix, cron: '30 4 * * *', timeZone: 'Asia/Shanghai', retryDelayMs: s.config.buildRetryDelayMs, logger: createLogger({ silent: true }), metrics: createWorkerMetrics(), deps: testBuildDeps(s, videoModel(s.mongo)), process: false });
  jobs.queue.getJobCounts = () => {
    throw new TypeError("injected dashboard bug: Cannot read properties of undefined (reading 'counts')");
  };
  const config = { ...s.config, adminUser: 'oncall', adminPassword: 'inspect-pass' };
  Object.defineProperty(config, 'shortRecommendV2Enabled', {
    get() {
      throw new TypeError("injected inspector bug: Cannot read properties of undefined (reading 'enabled')");
    },
  });
  const app = createWorkerApp({ config, queue: jobs.queue, metrics: createWorkerMetrics(), ...workerStores(s.redis, s.keys, s.mongo), videos: videoModel(s.mongo) });
  // Its bugs are injected: their 500 is what the test asserts, and no document describes it.
  server = withInjectedFaults(app.listen(0, '127.0.0.1'));
  await new Promise((resolve) => server.once('listening', resolve));
  // The process-wide logger as production writes it (JSON lines): winston's console transport
  // writes to stdout, or through console.log where Jest's console has no stdout of its own.
  lines = [];
  configureLogger({ logLevel: 'info', nodeEnv: 'production' });
  const capture = (chunk: unknown) => {
    const text = String(chunk);
    if (!text.startsWith('{')) return false;
    lines.push(JSON.parse(text) as Record<string, unknown>);
    return true;
  };
  // Also straight from the logger's stream, whatever its console transport writes to in a Jest worker.
  const fromLogger = (info: Record<symbol, unknown>) => {
    const text = info[Symbol.for('message')];
    if (typeof text === 'string') capture(text);
  };
  logger.on('data', fromLogger);
  const write = process.stdout.write.bind(process.stdout);
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => capture(chunk) || write(chunk, ...(rest as [])));
  const log = console.log.bind(console);
  const logSpy = jest.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    if (!capture(args[0])) log(...args);
  });
  s.disposeAfter(async () => {
    logger.off('data', fromLogger);
    spy.mockRestore();
    logSpy.mockRestore();
    configureLogger({ logLevel: 'info', nodeEnv: 'test' });
    await new Promise((resolve) => server.close(resolve));
    await jobs.close();
  });
});

describe('bugs on the admin pages (D5)', () => {
  it.each([
    ['the inspector', `${INSPECTOR_PATH}/api/summary`, 'injected inspector bug'],
    ['the job dashboard', `${DASHBOARD_PATH}/api/queues`, 'injected dashboard bug'],
  ])('when %s hits a bug, then it answers 500 and logs the error with its stack and the request id at error level', async (_surface, path, message) => {
    const res = await request(server).get(path).auth('oncall', 'inspect-pass').set('X-Request-Id', 'bug-hunt-1');
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toContain('injected');
    // winston writes the line on a later tick than the answer can reach the client.
    await waitUntil('the request failed line', async () => lines.some((l) => l.message === 'request failed'), 5_000);
    const line = lines.find((l) => l.message === 'request failed');
    expect(line).toMatchObject({ level: 'error', requestId: 'bug-hunt-1', status: 500, err: { name: 'TypeError', message: expect.stringContaining(message) } });
    expect((line!.err as { stack: string }).stack).toMatch(/TypeError: injected .*\n\s+at /);
  });
});
