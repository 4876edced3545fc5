/**
 * `pnpm start` on a machine with no Redis (issue 51 part 4): REDIS_URL unset and nothing on the
 * port probed (LOCAL_REDIS_PROBE_PORT, a closed port here, standing in for 6379), it starts a
 * private redis-server, serves the first page, and Ctrl-C stops that server too.
 */
import { spawnSync } from 'node:child_process';
import { exitWithin, freePort, listening, startProcess, tsx, waitUntil, type Managed } from '../../tools/support/processes';

const available = spawnSync('redis-server', ['--version']).status === 0;
if (!available && process.env.CI) throw new Error('redis-server not installed: the pnpm start test is required under CI');
const startIt = available ? it : it.skip;
let start: Managed | undefined;

afterAll(async () => {
  await start?.stop('SIGKILL');
});

describe('pnpm start without a Redis (issue 51 part 4)', () => {
  startIt('when REDIS_URL is unset and nothing answers on the default port, then a private redis-server serves the first page, and Ctrl-C stops it', async () => {
    const [probe, port, workerPort, mongoPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    start = startProcess(tsx('tools/start-all.ts'), {
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      REDIS_URL: '',
      MONGO_URL: '',
      LOCAL_REDIS_PROBE_PORT: String(probe),
      PORT: String(port),
      WORKER_PORT: String(workerPort),
      EMBEDDED_MONGO_PORT: String(mongoPort),
    });
    const output = () => start!.output.join('');
    const page = () => fetch(`http://127.0.0.1:${port}/api/app/recommend/vid/list?pageSize=3`, { headers: { 'X-Device-Id': 'start-all-test' } });
    // An exit ends the wait at once (its output then says why).
    await waitUntil('the first page', async () => start!.child.exitCode !== null || (await page()).status === 200, 180_000).catch((err: unknown) => {
      throw new Error(`${String(err)}; its output: ${output().slice(-3000)}`);
    });
    expect({ exitCode: start.child.exitCode, output: start.child.exitCode === null ? '' : output().slice(-3000) }).toEqual({ exitCode: null, output: '' });
    const url = /private redis-server started.*"url":"redis:\/\/127\.0\.0\.1:(\d+)"/.exec(output());
    expect(url).not.toBeNull();
    const redisPort = Number(url![1]);
    expect(await listening(redisPort)).toBe(true);
    start.child.kill('SIGINT');
    expect(await exitWithin(start, 'pnpm start', 15_000)).toBe(0);
    await waitUntil('the private redis-server stopped', async () => !(await listening(redisPort)), 5_000);
  }, 240_000);
});
