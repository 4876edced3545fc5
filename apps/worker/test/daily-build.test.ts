import { createClient, type RedisClientType } from 'redis';
import { mongo, Types } from 'mongoose';
import { BLOCK_SIZE, expandBlocks, MAX_RECOMMEND_SCORE, MIN_OFFSET_BUCKETS, USERS_PER_BUCKET, versionFor } from '@feed/domain';
import { BuildStore, offsetBucketKeys, offsetSlot, readMeta, videoModel, type VideoModel } from '@feed/storage';
import { demoVideo, seedVideos } from '@feed/demo-data';
import { waitUntil } from '../../../tools/support/processes';
import { assemble, BuildVerificationError, runDailyBuild, type BuildDeps } from '../src/daily-build/daily-build';
import { CandidateColumns } from '../src/daily-build/candidate-columns';
import { summarizeVersions } from '../src/inspect/inspect-versions';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';
import { offsetOf, setOffset } from '../../../test/support/feed-fixtures';

const DAY = 24 * 60 * 60 * 1000;
const AT = new Date('2026-07-24T00:30:00+08:00');
const VERSION = '20260724';

const s = useTestServices('build');
let videos: VideoModel;
let deps: BuildDeps;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  await videos.init();
});

beforeEach(async () => {
  await videos.deleteMany({});
  deps = testBuildDeps(s, videos);
});

const queueOf = (version = VERSION) => s.redis.lRange(s.keys.queue(version), 0, -1);

async function seed(high: number, fresh: number) {
  const oldIds = await seedVideos(videos, { videos: high, fresh: 0, now: AT, seed: 1 });
  const freshDocs = Array.from({ length: fresh }, (_, i) => demoVideo({ reviewAt: new Date(AT.getTime() - (i + 1) * 60_000) }));
  if (freshDocs.length) await videos.insertMany(freshDocs);
  return { oldIds, freshIds: freshDocs.map((d) => d._id!.toHexString()) };
}

function blockCompositions(queue: string[], freshIds: string[]) {
  const fresh = new Set(freshIds);
  const out: Array<{ high: number; fresh: number }> = [];
  for (let i = 0; i < queue.length; i += BLOCK_SIZE) {
    const block = queue.slice(i, i + BLOCK_SIZE);
    const n = block.filter((id) => fresh.has(id)).length;
    out.push({ high: block.length - n, fresh: n });
  }
  return out;
}

/** PEXPIREAT and PEXPIRETIME are not commands of the service: a plain node-redis client of the test's own. */
async function onPlainClient<T>(fn: (client: RedisClientType) => Promise<T>): Promise<T> {
  const client: RedisClientType = createClient({ url: process.env.TEST_REDIS_URL! });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.quit();
  }
}

describe('daily build', () => {
  it('when 170 old and 30 new videos exist, then current switches to a 17+3 queue with meta, TTLs and the legacy set', async () => {
    const { oldIds, freshIds } = await seed(170, 30);
    const result = await runDailyBuild(deps, { at: AT });
    expect(result.status).toBe('built');
    expect(await s.redis.get(s.keys.current)).toBe(VERSION);
    const queue = await queueOf();
    expect(queue).toHaveLength(200);
    expect(new Set(queue)).toEqual(new Set([...oldIds, ...freshIds]));
    expect(blockCompositions(queue, freshIds)).toEqual(Array.from({ length: 10 }, () => ({ high: 17, fresh: 3 })));

    const meta = await readMeta(s.redis, s.keys, VERSION);
    expect(meta).toMatchObject({ length: 200, startOffset: 0, candidateCount: 200, highCount: 170, newCount: 30, finalCount: 200, duplicateCount: 0, shadow: false });
    expect(expandBlocks(meta!.blocks)).toEqual(blockCompositions(queue, freshIds));
    expect(meta!.generatedAt).toBe(AT.toISOString());
    expect(meta!.switchedAt).toBeDefined();

    expect(await s.redis.ttl(s.keys.queue(VERSION))).toBeGreaterThan(71 * 3600);
    expect(await s.redis.ttl(s.keys.meta(VERSION))).toBeGreaterThan(71 * 3600);
    // The offset buckets (R22: a first day gets the minimum) do not exist until the first read;
    // the claim script gives each the queue's expiry.
    expect(meta).toMatchObject({ offsetBuckets: MIN_OFFSET_BUCKETS, buildId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await s.redis.exists(offsetBucketKeys(s.keys, { version: VERSION, offsetBuckets: MIN_OFFSET_BUCKETS }))).toBe(0);
    // The scores the build used, one per position, for explain.
    expect(await s.redis.lLen(s.keys.scores(VERSION))).toBe(queue.length);
    expect(await s.redis.ttl(s.keys.scores(VERSION))).toBeGreaterThan(71 * 3600);
    expect(await s.redis.ttl(s.keys.buildLock(VERSION))).toBe(-2);
    expect(new Set(await s.redis.sMembers(s.keys.legacyIds))).toEqual(new Set(queue));
    // The legacy set expires like the version's keys: a worker that stops building leaves nothing for ever.
    expect(await s.redis.ttl(s.keys.legacyIds)).toBeGreaterThan(71 * 3600);
  });

  it('when the legacy set vanished under a complete current version, then the forced rebuild the controller queues refills it (R21)', async () => {
    await seed(40, 3);
    await runDailyBuild(deps, { at: AT });
    const queue = await queueOf();
    await s.redis.del(s.keys.legacyIds);
    // The controller's repair job data for a current version that is today (desired-state.test.ts).
    const repaired = await runDailyBuild(deps, { at: AT, force: true });
    expect(repaired.status).toBe('built');
    expect(new Set(await s.redis.sMembers(s.keys.legacyIds))).toEqual(new Set(queue));
    expect(await s.redis.ttl(s.keys.legacyIds)).toBeGreaterThan(71 * 3600);
  });

  it('when an old day is rebuilt with --at, then its keys still live 72 h from now', async () => {
    await seed(30, 0);
    const old = new Date(Date.now() - 5 * DAY);
    const result = await runDailyBuild(deps, { at: old, force: true });
    expect(result.version).toBe(versionFor(old, 'Asia/Shanghai'));
    expect(await s.redis.ttl(s.keys.queue(result.version))).toBeGreaterThan(71 * 3600);
  });

  it.each([
    [0, [{ high: 20, fresh: 0 }]],
    [1, [{ high: 19, fresh: 1 }]],
    [2, [{ high: 18, fresh: 2 }]],
    [3, [{ high: 17, fresh: 3 }]],
  ])('when the new pool has %i videos, then the first block holds that many', async (fresh, first) => {
    const { freshIds } = await seed(60, fresh);
    await runDailyBuild(deps, { at: AT });
    const blocks = blockCompositions(await queueOf(), freshIds);
    expect(blocks[0]).toEqual(first[0]);
    expect(blocks.slice(1).every((b) => b.fresh === 0)).toBe(true);
  });

  it('when the high pool is too small, then new videos fill the blocks and nothing is duplicated', async () => {
    const { freshIds } = await seed(20, 30);
    await runDailyBuild(deps, { at: AT });
    const queue = await queueOf();
    expect(queue).toHaveLength(50);
    expect(new Set(queue).size).toBe(50);
    expect(blockCompositions(queue, freshIds)).toEqual([
      { high: 17, fresh: 3 },
      { high: 3, fresh: 17 },
      { high: 0, fresh: 10 },
    ]);
  });

  it('when fewer than 20 videos are eligible, then the queue keeps its real size', async () => {
    await seed(5, 2);
    await runDailyBuild(deps, { at: AT });
    expect(await queueOf()).toHaveLength(7);
  });

  it('when only some videos are eligible, then only approved, non-deleted short videos enter (VIP/coin/ad/special do)', async () => {
    const eligible = [
      demoVideo({ vip: true }),
      demoVideo({ coin: true }),
      demoVideo({ isAd: true }),
      demoVideo({ special: true }),
      demoVideo({}),
    ];
    const ineligible = [
      demoVideo({ status: 'pending' }),
      demoVideo({ status: 'rejected' }),
      demoVideo({ status: 'offline' }),
      demoVideo({ newsType: 'long' }),
      demoVideo({ deleted: true }),
    ];
    await videos.insertMany([...eligible, ...ineligible]);
    await runDailyBuild(deps, { at: AT });
    expect(new Set(await queueOf())).toEqual(new Set(eligible.map((v) => v._id!.toHexString())));
  });

  it('when scores are built, then recommendScore(At) are written back from the recommend counters only', async () => {
    const scored = demoVideo({ recommendLikeCount: 2, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1, likeCount: 99 });
    const fakeOnly = demoVideo({ fakeLikeCount: 1_000_000, fakeShareCount: 1_000_000, fakeCommentCount: 1_000_000, likeCount: 50 });
    await videos.insertMany([scored, fakeOnly]);
    await runDailyBuild(deps, { at: AT });
    const [a, b] = await Promise.all([videos.findById(scored._id).lean(), videos.findById(fakeOnly._id).lean()]);
    expect(a).toMatchObject({ recommendScore: 12, recommendScoreAt: AT });
    expect(b).toMatchObject({ recommendScore: 0, recommendScoreAt: AT });
    // Both are published: a zero score is a low score, not a reason to drop a video.
    expect((await queueOf()).sort()).toEqual([a!._id.toHexString(), b!._id.toHexString()].sort());
  });

  it('when the version is already current, then a second run does nothing unless forced', async () => {
    await seed(40, 3);
    await runDailyBuild(deps, { at: AT });
    await setOffset(s.redis, s.keys, VERSION, 'u:alice', 7);
    const aliceBucket = offsetSlot(s.keys, { version: VERSION, offsetBuckets: MIN_OFFSET_BUCKETS }, 'u:alice').key;
    await s.redis.expire(aliceBucket, 60);
    const firstBuild = (await readMeta(s.redis, s.keys, VERSION))!.buildId;
    const before = await queueOf();
    await videos.insertMany([demoVideo({})]);

    const again = await runDailyBuild(deps, { at: AT });
    expect(again.status).toBe('already-current');
    expect(await queueOf()).toEqual(before);

    const forced = await runDailyBuild(deps, { at: AT, force: true });
    expect(forced.status).toBe('built');
    expect(await queueOf()).toHaveLength(before.length + 1);
    // Documented choice: a forced rebuild keeps the version's offsets, so users continue
    // where they were instead of seeing the top of the queue again; every offset bucket lives
    // 72 h from this publish, like the queue; the new build id tells API instances to re-copy.
    expect(await offsetOf(s.redis, s.keys, VERSION, 'u:alice')).toBe('7');
    expect(await s.redis.ttl(aliceBucket)).toBeGreaterThan(71 * 3600);
    expect((await readMeta(s.redis, s.keys, VERSION))!.buildId).not.toBe(firstBuild);
  });

  it("when yesterday's version had more users than its buckets hold well, then today's gets twice the buckets (R22)", async () => {
    await seed(30, 0);
    const yesterday = new Date(AT.getTime() - 86_400_000);
    const previous = await runDailyBuild(deps, { at: yesterday });
    expect(previous.meta!.offsetBuckets).toBe(MIN_OFFSET_BUCKETS);
    const users = MIN_OFFSET_BUCKETS * USERS_PER_BUCKET + 1;
    await Promise.all(Array.from({ length: users }, (_, u) => setOffset(s.redis, s.keys, previous.version, `u:${u}`, 1)));
    const today = await runDailyBuild(deps, { at: AT });
    expect(today.meta!.offsetBuckets).toBe(2 * MIN_OFFSET_BUCKETS);
    expect((await summarizeVersions(new BuildStore(s.redis, s.keys), [previous.version])).versions[0].usersWithOffset).toBe(users);
  });

  it('when a build switched but failed before finishing, then the next run completes it instead of skipping', async () => {
    await seed(30, 0);
    await runDailyBuild(deps, { at: AT });
    // The state a failure after the switch leaves: current switched, completedAt never written.
    await s.redis.hDel(s.keys.meta(VERSION), 'completedAt');
    await videos.updateMany({}, { $unset: { recommendScoreAt: 1 } });
    expect((await runDailyBuild(deps, { at: AT })).status).toBe('built');
    expect(await videos.countDocuments({ recommendScoreAt: AT })).toBe(30);
    expect((await runDailyBuild(deps, { at: AT })).status).toBe('already-current');
  });

  it('when two workers build the same version at once, then exactly one builds', async () => {
    await seed(100, 10);
    const results = await Promise.all([runDailyBuild(deps, { at: AT }), runDailyBuild(deps, { at: AT })]);
    expect(results.map((r) => r.status).sort()).toEqual(['built', 'locked']);
    expect(await queueOf()).toHaveLength(110);
  });

  it('when a build fails before the switch, then current and the previous queue keep serving and the lock is freed', async () => {
    await seed(40, 0);
    const yesterday = new Date(AT.getTime() - DAY);
    const first = await runDailyBuild(deps, { at: yesterday });
    const previousQueue = await queueOf(first.version);

    const failing: BuildDeps = { ...deps, failpoint: async (point) => (point === 'before-publish' ? Promise.reject(new Error('injected failure')) : undefined) };
    await expect(runDailyBuild(failing, { at: AT })).rejects.toThrow('injected failure');
    expect(await s.redis.get(s.keys.current)).toBe(first.version);
    expect(await queueOf(first.version)).toEqual(previousQueue);
    expect(await s.redis.exists(s.keys.queue(VERSION))).toBe(0);
    const staged: string[] = [];
    for await (const batch of s.redis.scanKeys(`*${s.prefix}*staging*`)) staged.push(...batch);
    expect(staged).toEqual([]);
    expect(await s.redis.exists(s.keys.buildLock(VERSION))).toBe(0);

    const retry = await runDailyBuild(deps, { at: AT });
    expect(retry.status).toBe('built');
    expect(await s.redis.get(s.keys.previous)).toBe(first.version);
  });

  it('when a crashed worker left the lock behind, then the build waits for its expiry and then succeeds', async () => {
    await seed(30, 0);
    await s.redis.set(s.keys.buildLock(VERSION), 'dead-worker-token', { PX: 600_000 });
    expect((await runDailyBuild(deps, { at: AT })).status).toBe('locked');
    expect(await s.redis.get(s.keys.current)).toBeNull();
    // Its lease runs out now (a short PX from the start could lapse before the first build looked).
    await s.redis.pExpire(s.keys.buildLock(VERSION), 1);
    // Wait, bounded, for the lock's own expiry in Redis (observed state, not a fixed sleep).
    await waitUntil('the crashed worker\'s lock to expire', async () => (await s.redis.exists(s.keys.buildLock(VERSION))) === 0, 5_000);
    expect((await runDailyBuild(deps, { at: AT })).status).toBe('built');
  });

  it('when another build holds the lock for long, then a waiting build starts as soon as it is released, not when its TTL would end (R21)', async () => {
    await seed(30, 0);
    await s.redis.set(s.keys.buildLock(VERSION), 'live-holder', { PX: 600_000 });
    const looked = jest.spyOn(s.redis, 'exists');
    const waiting = runDailyBuild({ ...deps, lockWaitMs: 60_000 }, { at: AT, force: true });
    // The waiter polls (EXISTS on the lock); the holder finishes: its release lets the waiter in, ten minutes early.
    await waitUntil('the waiter to have looked at the lock', async () => looked.mock.calls.some(([key]) => key === s.keys.buildLock(VERSION)), 5_000);
    looked.mockRestore();
    await s.redis.del(s.keys.buildLock(VERSION));
    expect((await waiting).status).toBe('built');
    expect(await s.redis.get(s.keys.current)).toBe(VERSION);
  });

  it('when the holder built the version while another build waited, then the waiter plans again and does not build it twice', async () => {
    await seed(30, 0);
    await s.redis.set(s.keys.buildLock(VERSION), 'live-holder', { PX: 600_000 });
    const waiting = runDailyBuild({ ...deps, lockWaitMs: 60_000 }, { at: AT });
    // What the holder did: the version current and complete; then it released its lock.
    const holder = await runDailyBuild({ ...deps, store: new BuildStore(s.redis, { ...s.keys, buildLock: (v: string) => `${s.keys.buildLock(v)}:holder` }) }, { at: AT });
    expect(holder.status).toBe('built');
    await s.redis.del(s.keys.buildLock(VERSION));
    expect((await waiting).status).toBe('already-current');
  });

  it('when a shadow build holds its lock, then the live build of that version is not blocked, and a live build never blocks a shadow (R21)', async () => {
    await seed(30, 0);
    await s.redis.set(s.keys.shadowBuildLock(VERSION), 'shadow-holder', { PX: 600_000 });
    expect((await runDailyBuild(deps, { at: AT })).status).toBe('built');
    await s.redis.del(s.keys.shadowBuildLock(VERSION));
    await s.redis.set(s.keys.buildLock(VERSION), 'live-holder', { PX: 600_000 });
    expect((await runDailyBuild(deps, { at: AT, shadow: true })).status).toBe('shadow');
    expect(await s.redis.get(s.keys.buildLock(VERSION))).toBe('live-holder');
  });

  it('when no build waits, then a held lock is reported as locked at once with the time the lease has left', async () => {
    await seed(30, 0);
    await s.redis.set(s.keys.buildLock(VERSION), 'live-holder', { PX: 600_000 });
    const result = await runDailyBuild(deps, { at: AT });
    expect(result).toMatchObject({ status: 'locked', due: false });
    expect(result.lockExpiresInMs).toBeGreaterThan(500_000);
  });

  it('when the lock is lost mid-build to another owner, then nothing is published and neither the lock nor the new owner\'s staging is touched', async () => {
    await seed(30, 0);
    const othersStaging = s.keys.queueStaging(VERSION, 'other-owner');
    const stealing: BuildDeps = {
      ...deps,
      // The lock expires and another worker takes it, and starts writing, during our build.
      failpoint: async (point) => {
        if (point !== 'before-publish') return;
        await s.redis.set(s.keys.buildLock(VERSION), 'other-owner');
        await s.redis.rPush(othersStaging, 'their-work');
      },
    };
    await expect(runDailyBuild(stealing, { at: AT })).rejects.toThrow(/LOCK_LOST/);
    expect(await s.redis.get(s.keys.buildLock(VERSION))).toBe('other-owner');
    expect(await s.redis.lRange(othersStaging, 0, -1)).toEqual(['their-work']);
    expect(await s.redis.get(s.keys.current)).toBeNull();
    expect(await s.redis.exists([s.keys.queue(VERSION), s.keys.meta(VERSION)])).toBe(0);
  });

  it('when the staged queue no longer matches meta.length at publish, then the publish script refuses it and nothing is published (R10)', async () => {
    await seed(30, 0);
    const tampering: BuildDeps = {
      ...deps,
      failpoint: async (point) => {
        if (point !== 'before-publish') return;
        for await (const batch of s.redis.scanKeys(`${s.prefix}*queue:{${VERSION}}:staging:*`)) for (const key of batch) await s.redis.rPush(key, 'extra-id');
      },
    };
    await expect(runDailyBuild(tampering, { at: AT })).rejects.toThrow(/LENGTH_MISMATCH/);
    expect(await s.redis.get(s.keys.current)).toBeNull();
    expect(await s.redis.exists([s.keys.queue(VERSION), s.keys.meta(VERSION)])).toBe(0);
  });

  it('when an older version\'s build finishes after a newer one became current, then current stays on the newer version', async () => {
    await seed(30, 0);
    const yesterday = new Date(AT.getTime() - DAY);
    const older = versionFor(yesterday, 'Asia/Shanghai');
    // While yesterday's build is between its write and its publish, today's build completes.
    const racing: BuildDeps = { ...deps, failpoint: async (point) => void (point === 'before-publish' && (await runDailyBuild(deps, { at: AT }))) };
    const result = await runDailyBuild(racing, { at: yesterday });
    expect(result).toMatchObject({ version: older, status: 'superseded' });
    expect(await s.redis.get(s.keys.current)).toBe(VERSION);
    expect(await s.redis.lLen(s.keys.queue(older))).toBe(30);
    // An explicit switch still moves current back.
    expect((await runDailyBuild(deps, { at: yesterday, switch: true, force: true })).status).toBe('built');
    expect(await s.redis.get(s.keys.current)).toBe(older);
    expect(await s.redis.get(s.keys.previous)).toBe(VERSION);
  });

  it('when built in shadow mode, then the version is verified on keys of its own and current does not switch', async () => {
    await seed(40, 0);
    const yesterday = new Date(AT.getTime() - DAY);
    const live = await runDailyBuild(deps, { at: yesterday });
    await videos.insertMany(Array.from({ length: 5 }, () => demoVideo({ reviewAt: new Date(AT.getTime() - 3600_000) })));
    const shadow = await runDailyBuild(deps, { at: AT, shadow: true });
    expect(shadow.status).toBe('shadow');
    expect(await s.redis.get(s.keys.current)).toBe(live.version);
    expect(await s.redis.get(s.keys.shadow)).toBe(VERSION);
    expect(await readMeta(s.redis, s.keys, VERSION, 'shadow')).toMatchObject({ shadow: true, length: 45, newCount: 5, duplicateCount: 0 });
    expect(await s.redis.exists([s.keys.queue(VERSION), s.keys.meta(VERSION)])).toBe(0);
  });

  it('when a shadow is built for the current version itself, then its live queue, meta, offsets and TTLs are untouched (R20)', async () => {
    await seed(40, 0);
    await runDailyBuild(deps, { at: AT });
    await setOffset(s.redis, s.keys, VERSION, 'u:alice', 7);
    const aliceSlot = offsetSlot(s.keys, { version: VERSION, offsetBuckets: MIN_OFFSET_BUCKETS }, 'u:alice');
    const liveKeys = [s.keys.queue(VERSION), s.keys.scores(VERSION), s.keys.meta(VERSION), aliceSlot.key];
    // Each live key expires at an instant of its own, to the millisecond: a shadow that set any
    // expiry again (even to the same TTL in the same second) moves it.
    const expiresAt = liveKeys.map((_, i) => Date.now() + 3_600_000 + 7_919 * (i + 1));
    await onPlainClient((raw) => Promise.all(liveKeys.map((key, i) => raw.pExpireAt(key, expiresAt[i]))));
    const before = { queue: await queueOf(), meta: await s.redis.hGetAll(s.keys.meta(VERSION)), offsets: await s.redis.hGetAll(aliceSlot.key) };

    await videos.insertMany(Array.from({ length: 5 }, () => demoVideo({ reviewAt: new Date(AT.getTime() - 3600_000) })));
    const shadow = await runDailyBuild(deps, { at: AT, shadow: true });

    expect(shadow).toMatchObject({ version: VERSION, status: 'shadow' });
    expect(await s.redis.get(s.keys.current)).toBe(VERSION);
    expect(await queueOf()).toEqual(before.queue);
    expect(await s.redis.hGetAll(s.keys.meta(VERSION))).toEqual(before.meta);
    expect(await s.redis.hGetAll(aliceSlot.key)).toEqual(before.offsets);
    expect(await offsetOf(s.redis, s.keys, VERSION, 'u:alice')).toBe('7');
    expect(await onPlainClient((raw) => Promise.all(liveKeys.map((key) => raw.pExpireTime(key))))).toEqual(expiresAt);
    expect(await s.redis.lLen(s.keys.shadowQueue(VERSION))).toBe(45);

    const summary = await summarizeVersions(new BuildStore(s.redis, s.keys));
    expect(summary.versions.map((v) => v.version)).toEqual([VERSION]);
    expect(summary.shadow).toMatchObject({ version: VERSION, role: ['shadow'], queueLength: 45, usersWithOffset: 0 });
    expect(summary.shadowDiff).toMatchObject({ base: VERSION, other: VERSION, baseLength: 40, otherLength: 45, onlyInOther: 5, onlyInBase: 0 });
  });

  it('when a day older than current is replayed, then it is built as a shadow unless switch is asked for', async () => {
    await seed(40, 0);
    const yesterday = new Date(AT.getTime() - DAY);
    await runDailyBuild(deps, { at: AT });
    const replay = await runDailyBuild(deps, { at: yesterday });
    expect(replay).toMatchObject({ status: 'shadow', reason: expect.stringContaining(`older than current ${VERSION}`) });
    expect(await s.redis.get(s.keys.current)).toBe(VERSION);

    const switched = await runDailyBuild(deps, { at: yesterday, switch: true });
    expect(switched.status).toBe('built');
    expect(await s.redis.get(s.keys.current)).toBe(replay.version);
  });

  it("when a day later than today is built, then it does not become current, so that day's scheduled build still runs", async () => {
    await seed(40, 0);
    const today = { ...deps, now: () => AT };
    const tomorrow = new Date(AT.getTime() + DAY);
    const early = await runDailyBuild(today, { at: tomorrow });
    expect(early).toMatchObject({ status: 'shadow', reason: expect.stringContaining('later than today') });
    expect(await s.redis.get(s.keys.current)).toBeNull();
    const scheduled = await runDailyBuild({ ...deps, now: () => tomorrow }, { at: tomorrow });
    expect(scheduled).toMatchObject({ version: early.version, status: 'built' });
  });

  it('when the next day is built, then only the documents whose score changed are written back, stamped with that build (R2)', async () => {
    const { oldIds } = await seed(30, 0);
    const first = await runDailyBuild(deps, { at: AT });
    expect(first.scoresWritten).toBe(30);
    const nextDay = new Date(AT.getTime() + DAY);
    const bumped = oldIds.slice(0, 3);
    await videos.updateMany({ _id: { $in: bumped } }, { $inc: { recommendShareCount: 1 } });

    const second = await runDailyBuild(deps, { at: nextDay });
    expect(second.scoresWritten).toBe(3);
    const docs = await videos.find({}).select({ recommendScore: 1, recommendScoreAt: 1, recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1 }).lean();
    // R2 written out here, not the domain's recommendScore (the code under test is no oracle).
    const r2 = (d: (typeof docs)[number]) => (d.recommendLikeCount ?? 0) + 2 * (d.recommendCollectCount ?? 0) + 3 * (d.recommendCommentCount ?? 0) + 5 * (d.recommendShareCount ?? 0);
    for (const doc of docs) {
      expect(doc.recommendScore).toBe(r2(doc));
      expect(doc.recommendScoreAt).toEqual(bumped.includes(doc._id.toHexString()) ? nextDay : AT);
    }
  });

  it('when no video is eligible, then nothing is published and current is untouched', async () => {
    await videos.insertMany([demoVideo({ status: 'pending' })]);
    await expect(runDailyBuild(deps, { at: AT })).rejects.toThrow('no eligible videos');
    expect(await s.redis.get(s.keys.current)).toBeNull();
  });

  it('when odd documents sit among normal videos, then every readable eligible video is published exactly once and the odd ones are counted (R1a)', async () => {
    const { oldIds } = await seed(40, 0);
    const { Decimal128, Long, Double } = mongo;
    const eligible = { status: 'approved', newsType: 'short', deleted: false };
    const odd = [
      { recommendLikeCount: Decimal128.fromString('5'), reviewAt: new Date(AT.getTime() - 2 * DAY) },
      { recommendLikeCount: Long.fromString('9007199254740993'), recommendShareCount: new Double(-3), reviewAt: new Date(-1e14) },
      { recommendLikeCount: 'twelve', recommendCollectCount: [1, 2], recommendCommentCount: { n: 1 }, recommendShareCount: null, reviewAt: 'yesterday' },
      { recommendLikeCount: NaN, recommendCollectCount: 1e300, reviewAt: new Date(8.64e15) },
    ].map((fields) => ({ _id: new Types.ObjectId(), ...eligible, ...fields }));
    await videos.collection.insertMany(odd);
    await videos.collection.insertOne({ _id: 'not-an-object-id' as never, ...eligible, recommendLikeCount: 3 });
    const result = await runDailyBuild(deps, { at: AT });
    expect(result.status).toBe('built');
    const queue = await queueOf();
    expect(queue).toHaveLength(44);
    expect(new Set(queue)).toEqual(new Set([...oldIds, ...odd.map((d) => d._id.toHexString())]));
    // One reason a document: the 2^53 + 1 like count and the 2e300 collects pass MAX_RECOMMEND_SCORE.
    const issues = { 'unreadable-id': 1, 'non-numeric-field': 1, 'saturated-score': 2 };
    expect(result.meta?.documentIssues).toEqual(issues);
    expect((await readMeta(s.redis, s.keys, VERSION))?.documentIssues).toEqual(issues);
    const decimal = await videos.findById(odd[0]._id).lean();
    expect(decimal?.recommendScore).toBe(5);
  });

  it('when counters are 1e308, then the score written back is finite (saturated) and the document is counted as odd (R1a, R23)', async () => {
    await seed(5, 0);
    const huge = { _id: new Types.ObjectId(), status: 'approved', newsType: 'short', deleted: false, recommendLikeCount: 1e308, recommendShareCount: 1e308, reviewAt: new Date(AT.getTime() - DAY) };
    await videos.collection.insertOne(huge);
    const result = await runDailyBuild(deps, { at: AT });
    expect(result.meta?.documentIssues).toEqual({ 'saturated-score': 1 });
    expect((await videos.findById(huge._id).lean())?.recommendScore).toBe(MAX_RECOMMEND_SCORE);
    expect(await videos.collection.countDocuments({ recommendScore: { $in: [Infinity, -Infinity, NaN] } })).toBe(0);
  });

  it('when ids are written, then they are 24-hex ObjectId strings', async () => {
    await seed(25, 0);
    await runDailyBuild(deps, { at: AT });
    for (const id of await queueOf()) expect(Types.ObjectId.isValid(id) && /^[0-9a-f]{24}$/.test(id)).toBe(true);
  });
});

describe('assemble (R10 verification)', () => {
  const id = (n: number) => n.toString(16).padStart(24, '0');
  const columns = (ids: string[]) => CandidateColumns.from(ids.map((x) => ({ id: x, score: 1, reviewAt: null })));

  it('when the read returned an id twice, then the build refuses to publish, naming the count', () => {
    expect(() => assemble(columns([id(1), id(2), id(1), id(3), id(2)]), {}, AT, VERSION, false, MIN_OFFSET_BUCKETS)).toThrow(new BuildVerificationError('read 2 duplicate video ids'));
  });

  it('when every id is distinct, then the queue holds each once and the meta says no duplicates', () => {
    const ids = Array.from({ length: 45 }, (_, i) => id(i + 1));
    const { candidates, order, meta } = assemble(columns(ids), {}, AT, VERSION, false, MIN_OFFSET_BUCKETS);
    expect(Array.from(order, (i) => candidates.idHex(i)).sort()).toEqual(ids);
    expect(meta).toMatchObject({ length: 45, duplicateCount: 0 });
  });
});
