/** A deployable (API or worker) run as a process, waited for until it answers: one way for the tests, the benchmarks and the reliability suite. */
import { freePort, startProcess, waitUntil, type Managed } from './processes';

export interface TestDeployable {
  process: Managed;
  port: number;
  /** http://127.0.0.1:<port>, answering /healthz. */
  base: string;
}

/** Where a deployable runs: its Redis (default: the test run's, TEST_REDIS_URL), key prefix (absent: the deployable's default) and MongoDB. */
export interface DeployableScope {
  redisUrl?: string;
  prefix?: string;
  mongoUrl: string;
}

export interface StartOptions {
  /** How long it may take to answer (default 60 s: tsx compiles at start, 16-21 s at load ~12). */
  startupMs?: number;
  /** The port to listen on (a restart on the port clients already use); absent: a free one. */
  port?: number;
  /** The route that must answer 2xx (default /healthz; /readyz waits for the stores too). */
  until?: '/healthz' | '/readyz';
}

/**
 * Starts `args` (node arguments, e.g. `tsx('apps/api/src/main.ts')`) with `env` over the scope's
 * settings (NODE_ENV test unless `env` says), PORT and WORKER_PORT the port chosen, and waits
 * until the route answers; on a timeout it is killed and its output is in the error.
 */
export async function startTestDeployable(args: string[], scope: DeployableScope, env: Record<string, string> = {}, options: StartOptions = {}): Promise<TestDeployable> {
  const port = options.port ?? (await freePort());
  const redisUrl = scope.redisUrl ?? process.env.TEST_REDIS_URL;
  const child = startProcess(args, {
    NODE_ENV: 'test',
    // Tests probe pages with a fresh guest id each (all from 127.0.0.1): the new-device limit is not their subject.
    NEW_DEVICES_PER_ADDRESS: '1000000',
    // Many deployables share a test's in-process embedded MongoDB: a start waits for the pool minimum
    // (production 20), which is the toggles check's subject, not theirs.
    MONGO_MIN_POOL_SIZE: '2',
    // Nor do they wait for the start's warm-up (1,000 requests; the toggles check runs it).
    API_WARM_UP_REQUESTS: '0',
    ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl }),
    ...(scope.prefix === undefined ? {} : { REDIS_KEY_PREFIX: scope.prefix }),
    MONGO_URL: scope.mongoUrl,
    ...env,
    PORT: String(port),
    WORKER_PORT: String(port),
  });
  const base = `http://127.0.0.1:${port}`;
  const route = options.until ?? '/healthz';
  try {
    await waitUntil(`${args.at(-1)} answering ${route} on ${port}`, () => fetch(`${base}${route}`).then((r) => r.ok, () => false), options.startupMs ?? 60_000);
  } catch (err) {
    await child.stop('SIGKILL');
    throw new Error(`${String(err)}; its output: ${child.output.join('').slice(-2000)}`);
  }
  return { process: child, port, base };
}
