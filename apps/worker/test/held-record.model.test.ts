/**
 * R23's held-record rule under every interleaving of two holds on the real Redis: a hold of an
 * older day (the controller repairing an older current) and the due day's hold, at the same
 * moment. fast-check's scheduler releases each Redis command of both holds in an order it draws.
 * The model: the later day stays the held record (its build) and `shadow` points at it, whatever
 * the order and whatever older record was there before; each build's shadow keys are its own.
 */
import fc from 'fast-check';
import { judgeRelease, releaseFigures } from '@feed/domain';
import { BuildStore, Lease, readHeldVersion, readMeta, videoModel, VersionStore, type QueueMeta } from '@feed/storage';
import { holdVersion } from '../src/daily-build/daily-build';
import { acquireBuildLock } from '../src/daily-build/build-lock';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';
import { scheduledRedis } from '../../../test/support/scheduled-redis';

const seed = process.env.CI ? 43_10 : Date.now() % 2 ** 31;
console.log(`held-record.model.test.ts fast-check seed ${seed}`);

const s = useTestServices('held-record');
const ID = 'a'.repeat(24);

const meta = (version: string, length: number, buildId: string): QueueMeta => ({
  version,
  length,
  generatedAt: new Date().toISOString(),
  startOffset: 0,
  candidateCount: length,
  highCount: length,
  newCount: 0,
  finalCount: length,
  duplicateCount: 0,
  documentIssues: {},
  blocks: [],
  builtAt: new Date().toISOString(),
  buildId,
  offsetBuckets: 1,
  shadow: false,
});

const day = fc.integer({ min: 0, max: 27 }).map((d) => `202607${String(d + 1).padStart(2, '0')}`);

describe('two holds at once (R23)', () => {
  it("when an older day's hold and a later day's hold interleave in any order, over no record or an older one, then the later day is the held record (its build) and the shadow pointer stays on it", async () => {
    const deps = testBuildDeps(s, videoModel(s.mongo));
    const versions = new VersionStore(s.redis, s.keys);
    // Current's figures (100 videos) against which a 10-video build is held.
    const current = releaseFigures(meta('20260601', 100, 'current'));
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.uniqueArray(day, { minLength: 2, maxLength: 2 }), fc.boolean(), async (scheduler, days, olderHeldBefore) => {
        const [older, later] = [...days].sort();
        await s.redis.del([s.keys.held, s.keys.shadow]);
        if (olderHeldBefore) {
          await s.redis.set(s.keys.held, JSON.stringify({ version: '20260601', buildId: 'before', heldAt: '', current: null, verdict: {} }));
          await s.redis.set(s.keys.shadow, '20260601');
        }
        const hold = async (version: string) => {
          const lock = (await acquireBuildLock(new Lease(s.redis, s.keys.buildLock(version), 60_000)))!;
          try {
            const built = meta(version, 1, `build-${version}-${lock.token}`);
            await versions.stage(built, lock, 600, async ({ queue, scores }) => {
              await queue([ID]);
              await scores(['1']);
            });
            const verdict = judgeRelease(releaseFigures(built), current, {});
            expect(verdict.hold).toBe(true);
            await holdVersion({ ...deps, store: new BuildStore(scheduledRedis(s.redis, scheduler, version), s.keys) }, built, lock, verdict);
            return built.buildId;
          } finally {
            await lock.release();
          }
        };
        const [, laterBuild] = await scheduler.waitFor(Promise.all([hold(older), hold(later)]));

        const held = await readHeldVersion(s.redis, s.keys);
        expect({ version: held?.version, buildId: held?.buildId, shadow: await s.redis.get(s.keys.shadow) }).toEqual({ version: later, buildId: laterBuild, shadow: later });
        for (const version of [older, later]) expect(await readMeta(s.redis, s.keys, version, 'shadow')).toMatchObject({ version, shadow: true });
      }),
      { seed, numRuns: process.env.CI ? 40 : 60 },
    );
  });
});
