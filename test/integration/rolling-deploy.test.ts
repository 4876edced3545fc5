/**
 * Scaling and deploying the API under load lose nothing (SPEC D4): real API processes on
 * 127.0.0.1, ~20 keep-alive clients (fetch) each choosing an instance per request from the
 * endpoints a load balancer would route to. The balancer adds an instance once its /readyz says
 * 200 (scale-out) and keeps routing to a SIGTERMed one for the propagation delay (Kubernetes:
 * seconds). Every failed request is counted, and each user's served videos must be the queue's
 * positions in order: none served twice, none skipped. Redis is a private TLS-only server with an
 * ACL user and a password (issue 51 part 1); each instance's /readyz is logged every 0.5 s.
 */
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { versionFor } from '@feed/domain';
import { exited, tsx, waitUntil } from '../../tools/support/processes';
import { bearer, publishQueue } from '../support/feed-fixtures';
import { startTestDeployable, type TestDeployable } from '../support/deployables';
import { sampleReadiness } from '../support/page-readers';
import { useTestServices } from '../support/services';

const VERSION = versionFor(new Date(), 'Asia/Shanghai');
const CLIENTS = 20;
const PAGE = 5;
/** Each client's pause between its requests: load enough to keep every instance busy, on a shared machine. */
const PACE_MS = 40;
const s = useTestServices('rolling', {}, { secureRedis: true });
const readiness: Array<ReturnType<typeof sampleReadiness>> = [];
let queue: string[];

beforeAll(async () => {
  const docs = await videoModel(s.mongo).insertMany(Array.from({ length: 400 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z') })));
  queue = docs.map((d) => d._id.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, VERSION, queue);
  await s.redis.sAdd(s.keys.legacyIds, queue);
});

/** An API instance, started with the defaults (SHUTDOWN_DELAY_MS 5 s) and ready: /readyz 200. A busy machine must not turn a slow Redis answer into a fallback page, nor a slow MongoDB one into a 503 (as in useTestServices; seen at load 16-19: "video lookup timed out after 967 ms"). */
async function startInstance(): Promise<TestDeployable> {
  const api = await startTestDeployable(tsx('apps/api/src/main.ts'), { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, { ...s.redisEnv, LOG_LEVEL: 'warn', REDIS_DEADLINE_MS: '5000', MONGO_DEADLINE_MS: '5000' }, { until: '/readyz', startupMs: 120_000 });
  s.disposeAfter(() => api.process.stop('SIGKILL'));
  const sampler = sampleReadiness({ [`instance ${readiness.length + 1} (${api.base})`]: api.base });
  readiness.push(sampler);
  s.disposeAfter(() => sampler.stop());
  return api;
}

/** The clients under load, and what they saw. */
function startLoad(endpoints: Set<string>) {
  const failures: string[] = [];
  const served = new Map<string, string[]>();
  const perInstance = new Map<string, number>();
  const exits: Array<number | null> = [];
  let requests = 0;
  let stopped = false;
  const client = async (user: string) => {
    const seen: string[] = [];
    served.set(user, seen);
    // Bounded: the scenario stops the clients long before.
    for (let i = 0; i < 20_000 && !stopped; i++) {
      const bases = [...endpoints];
      const base = bases[Math.floor(Math.random() * bases.length)];
      try {
        const res = await fetch(`${base}/api/app/recommend/vid/list?pageSize=${PAGE}`, { headers: bearer(user) });
        const body = (await res.json()) as { queueVersion?: string; vInfos?: Array<{ vid: string }> };
        if (res.status !== 200 || body.queueVersion !== VERSION) failures.push(`${base}: ${res.status} ${body.queueVersion ?? JSON.stringify(body).slice(0, 300)}`);
        else seen.push(...body.vInfos!.map((v) => v.vid));
      } catch (err) {
        failures.push(`${base}: ${String((err as { cause?: { code?: string } }).cause?.code ?? err)}`);
      }
      requests++;
      perInstance.set(base, (perInstance.get(base) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, PACE_MS));
    }
  };
  const running = Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(`rolling-${i}`)));
  s.disposeAfter(async () => {
    stopped = true;
    await running;
  });
  return {
    failures,
    exits,
    served,
    perInstance,
    /** Lets `count` more requests complete (at most `timeoutMs`). */
    more: async (count: number, timeoutMs = 30_000) => {
      const target = requests + count;
      await waitUntil(`${count} more requests`, async () => requests >= target, timeoutMs);
    },
    stop: async () => {
      stopped = true;
      await running;
      return requests;
    },
  };
}

type Load = ReturnType<typeof startLoad>;

/** Scale-in of one instance: SIGTERM; the balancer routes to it for `propagationMs` more; it exits 0 within D4's bound. */
async function scaleIn(endpoints: Set<string>, load: Load, api: TestDeployable, propagationMs: number): Promise<void> {
  api.process.child.kill('SIGTERM');
  const exit = exited(api.process);
  const propagated = new Promise((resolve) => setTimeout(resolve, propagationMs)).then(() => endpoints.delete(api.base));
  // Unready at once, while it still serves the clients routed to it (checked after the load, so that a
  // failure here still lets the load count what the clients saw).
  const unready = await waitUntil('/readyz 503 after SIGTERM', async () => (await fetch(`${api.base}/readyz`)).status === 503, 3_000).then(() => true, () => false);
  if (!unready) load.failures.push(`${api.base}: /readyz not 503 after SIGTERM`);
  await propagated;
  load.exits.push(await exit);
  await load.more(50);
}

/** Scale-out by one: the balancer routes to the new instance once it says ready. */
async function scaleOut(endpoints: Set<string>, load: Load): Promise<TestDeployable> {
  const api = await startInstance();
  endpoints.add(api.base);
  await load.more(50);
  return api;
}

describe('scaling and rolling restarts under load (D4)', () => {
  it('when the API is scaled out, rolled (3 s, then no endpoint propagation) and scaled in under load, then no request fails and no user is served a position twice or skips one', async () => {
    const initial = await Promise.all([startInstance(), startInstance()]);
    const endpoints = new Set(initial.map((api) => api.base));
    const load = startLoad(endpoints);
    await load.more(50);
    // A rolling restart: each instance replaced by a new one (scale-out, then scale-in of the old),
    // the balancer taking 3 s to stop routing to the first, no time for the second.
    const propagation = [3_000, 0];
    const replacements: TestDeployable[] = [];
    for (const [i, old] of initial.entries()) {
      replacements.push(await scaleOut(endpoints, load));
      await scaleIn(endpoints, load, old, propagation[i]);
    }
    // Scale-in to one.
    await scaleIn(endpoints, load, replacements[0], 3_000);
    const requests = await load.stop();
    console.log((await Promise.all(readiness.map((r) => r.stop()))).join('\n'));
    const failedAt = (api: TestDeployable) => load.failures.filter((f) => f.startsWith(api.base)).length;
    console.log(
      `rolling restart: ${load.failures.length} failed of ${requests} requests; SIGTERMed with 3 s propagation: ${failedAt(initial[0]) + failedAt(replacements[0])} failed of ${(load.perInstance.get(initial[0].base) ?? 0) + (load.perInstance.get(replacements[0].base) ?? 0)}; with none: ${failedAt(initial[1])} failed of ${load.perInstance.get(initial[1].base)}`,
    );

    expect(load.failures).toEqual([]);
    expect(load.exits).toEqual([0, 0, 0]);
    // Every instance took part.
    for (const api of [...initial, ...replacements]) expect(load.perInstance.get(api.base)).toBeGreaterThan(0);
    // Each user's pages are the queue's positions in order, from the start, laps included.
    for (const [user, seen] of load.served) {
      expect(seen.length).toBeGreaterThan(0);
      const expected = seen.map((_, i) => queue[i % queue.length]);
      if (seen.some((vid, i) => vid !== expected[i])) throw new Error(`${user} was served ${seen.length} videos not in queue order: first difference at ${seen.findIndex((vid, i) => vid !== expected[i])}`);
    }
  }, 420_000);
});
