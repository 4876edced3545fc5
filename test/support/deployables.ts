/** A deployable run as a process for a test: over the test's Redis prefix and database, on a free port. */
import { freePort, startProcess, waitUntil, type Managed } from '../../tools/support/processes';

export interface TestDeployable {
  process: Managed;
  /** http://127.0.0.1:<port>, answering /healthz. */
  base: string;
}

/** Starts `args` (node arguments, e.g. `tsx('apps/api/src/main.ts')`) and waits until /healthz answers (for `startupMs`). */
export async function startTestDeployable(args: string[], scope: { prefix: string; mongoUrl: string }, env: Record<string, string> = {}, startupMs = 30_000): Promise<TestDeployable> {
  const port = await freePort();
  const child = startProcess(args, {
    NODE_ENV: 'test',
    REDIS_URL: process.env.TEST_REDIS_URL!,
    REDIS_KEY_PREFIX: scope.prefix,
    MONGO_URL: scope.mongoUrl,
    PORT: String(port),
    WORKER_PORT: String(port),
    ...env,
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntil(`${args.at(-1)} listening on ${port}`, () => fetch(`${base}/healthz`).then((r) => r.ok, () => false), startupMs);
  } catch (err) {
    await child.stop('SIGKILL');
    throw new Error(`${String(err)}; its output: ${child.output.join('').slice(-2000)}`);
  }
  return { process: child, base };
}
