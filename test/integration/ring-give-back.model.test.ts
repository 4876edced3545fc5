/**
 * Model-based test of the ring's claims and give-backs (SPEC R11), against the real Lua scripts
 * on a Redis of the test's own, which it stops (SIGSTOP) and resumes (SIGCONT).
 *
 * fast-check draws programs: a ring of length 1..60, a few users, batches of concurrent claims
 * of those users; a batch may run during a stall (every claim then answers after the API gave
 * up), and any claim may answer late (the API served a fallback page). A late claim is given
 * back when its answer arrives or one or two batches later (its give-back overtaken by later
 * claims). The model is the set of absolute positions each user was served (ring position =
 * absolute % length, circle k = [k * length, (k + 1) * length)); after the program, its
 * give-backs and a drain of the positions given back out of order, each user's history holds:
 *   - no position served twice within a circle (no absolute position twice);
 *   - none skipped unserved: the positions served are exactly [0, T), T the user's cursor;
 *   - offset = positions served % length.
 * Seeds: fixed under CI, random otherwise; printed, and fast-check's failure report carries the
 * seed and path that replay it (FC_SEED=<seed> to rerun).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { claimPositions, closeRedis, connectRedis, createRedisKeys, offsetSlot, parseCursor, readOffset, unclaimPositions, type Claim, type Redis, type RingVersion } from '@feed/storage';
import { freePort, startRedis, type Managed } from '../../tools/support/processes';

const SEED = Number(process.env.FC_SEED) || (process.env.CI ? 320_032 : Math.floor(Math.random() * 2 ** 31));
const RUNS = process.env.CI ? 60 : 40;

let dir: string;
let server: Managed;
let redis: Redis;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'feed-ring-model-'));
  const port = await freePort();
  server = await startRedis(port, dir);
  redis = await connectRedis({ redisUrl: `redis://127.0.0.1:${port}` });
});

afterAll(async () => {
  if (server?.child.signalCode === null) server.child.kill('SIGCONT');
  if (redis) await closeRedis(redis);
  await server?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface ClaimStep {
  user: number;
  count: number;
  /** served: the API served the page; late: it had given up, the claim is given back after `delay` batches. */
  fate: 'served' | 'late';
  delay: number;
}

const program = fc.record({
  length: fc.integer({ min: 1, max: 60 }),
  users: fc.integer({ min: 1, max: 3 }),
  batches: fc.array(
    fc.record({
      stalled: fc.boolean(),
      claims: fc.array(fc.record({ user: fc.nat(2), count: fc.integer({ min: 1, max: 25 }), fate: fc.constantFrom<'served' | 'late'>('served', 'late'), delay: fc.nat(2) }), { minLength: 1, maxLength: 6 }),
    }),
    { minLength: 1, maxLength: 8 },
  ),
});

let runNumber = 0;

type Program = typeof program extends fc.Arbitrary<infer T> ? T : never;

async function runProgram({ length, users, batches }: Program): Promise<void> {
  const keys = createRedisKeys(`model:${++runNumber}:`);
  const ring: RingVersion = { version: '20260724', length, buildId: 'model', offsetBuckets: 2, expiresAt: 0 };
  const userKey = (u: number) => `u:${u % users}`;
  const served = new Map<string, number[]>();
  const serve = (user: string, claim: Claim) => served.set(user, [...(served.get(user) ?? []), ...Array.from({ length: claim.count }, (_, i) => claim.at + i)]);
  const inFlight: Array<Promise<unknown>> = [];
  let deferred: Array<{ due: number; giveBack: () => Promise<unknown> }> = [];

  for (const [index, batch] of batches.entries()) {
    for (const item of deferred.filter((d) => d.due <= index)) inFlight.push(item.giveBack());
    deferred = deferred.filter((d) => d.due > index);
    if (batch.stalled) server.child.kill('SIGSTOP');
    const answers = batch.claims.map(async (step: ClaimStep) => {
      const user = userKey(step.user);
      const claim = await claimPositions(redis, keys, ring, user, step.count);
      // During a stall every answer comes after the API's deadline: all of them are given back.
      if (step.fate === 'served' && !batch.stalled) return serve(user, claim);
      const giveBack = () => unclaimPositions(redis, keys, ring, user, claim);
      if (step.delay === 0) inFlight.push(giveBack());
      else deferred.push({ due: index + step.delay, giveBack });
    });
    if (batch.stalled) server.child.kill('SIGCONT');
    await Promise.all(answers);
  }
  inFlight.push(...deferred.map((d) => d.giveBack()));
  await Promise.all(inFlight);

  for (let u = 0; u < users; u++) {
    const user = userKey(u);
    const { key, field } = offsetSlot(keys, ring, user);
    // Drain: positions given back after later claims were served are the next ones claimed.
    while ((await redis.hGet(key, field))?.includes(',')) serve(user, await claimPositions(redis, keys, ring, user, length));
    const positions = served.get(user) ?? [];
    const cursor = parseCursor(await redis.hGet(key, field)) ?? 0;
    const have = new Set(positions);
    expect({ user, duplicates: positions.length - have.size }).toEqual({ user, duplicates: 0 });
    const skipped = Array.from({ length: cursor }, (_, p) => p).filter((p) => !have.has(p));
    expect({ user, skipped, beyondCursor: positions.filter((p) => p >= cursor) }).toEqual({ user, skipped: [], beyondCursor: [] });
    expect({ user, offset: await readOffset(redis, keys, ring, user) }).toEqual({ user, offset: positions.length % length });
  }
}

describe('ring claims and give-backs, model-based (R11)', () => {
  it('when concurrent claims of a few users run with stalls, late answers and give-backs on rings of length 1..60, then no position is served twice within a circle, none is skipped unserved, and offset = positions served mod length', async () => {
    console.log(`ring give-back model: fast-check seed ${SEED}, ${RUNS} runs (replay: FC_SEED=${SEED})`);
    await fc.assert(fc.asyncProperty(program, runProgram), { seed: SEED, numRuns: RUNS });
  }, 300_000);
});
