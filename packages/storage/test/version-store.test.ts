/**
 * The version store's one definition of "complete" (R10, R21, R22) over a real Redis: the
 * controller repairs, the queue copies discard and the inspector flags exactly what it calls
 * incomplete. Keys are written by hand, as a crash or an expiry would leave them.
 */
import { PublishRefusedError, VersionStore, type QueueMeta } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('version-store');
const V = '20260724';
const IDS = Array.from({ length: 5 }, (_, i) => `id-${i}`);

/** Writes `ids` as the queue of `V` (live, or its shadow copy's) and a meta naming `metaLength`; null: no meta. */
async function writeVersion(ids: string[], metaLength: number | null, copy: 'live' | 'shadow' = 'live') {
  const queue = copy === 'shadow' ? s.keys.shadowQueue(V) : s.keys.queue(V);
  const meta = copy === 'shadow' ? s.keys.shadowMeta(V) : s.keys.meta(V);
  if (ids.length) await s.redis.rPush(queue, ids);
  if (metaLength !== null) await s.redis.hSet(meta, { version: V, length: String(metaLength), buildId: 'build-1', offsetBuckets: '256' });
}

const store = () => new VersionStore(s.redis, s.keys);

describe('VersionStore.completeness', () => {
  it('when the queue holds exactly meta.length ids, then the version is complete, with its length and build', async () => {
    await writeVersion(IDS, IDS.length);
    expect(await store().completeness(V)).toEqual({ complete: true, length: 5, buildId: 'build-1' });
  });

  it('when the meta is missing, then the version is not complete and the problem says so', async () => {
    await writeVersion(IDS, null);
    expect(await store().completeness(V)).toEqual({ complete: false, problem: 'queue length 5, meta.length missing' });
  });

  it('when the queue is missing, then the version is not complete', async () => {
    await writeVersion([], IDS.length);
    expect(await store().completeness(V)).toEqual({ complete: false, problem: 'queue length 0, meta.length 5' });
  });

  it('when the queue is shorter or longer than meta.length, then the version is not complete', async () => {
    await writeVersion(IDS.slice(0, 4), IDS.length);
    expect(await store().completeness(V)).toMatchObject({ complete: false, problem: 'queue length 4, meta.length 5' });
    await s.redis.rPush(s.keys.queue(V), ['id-4', 'id-5']);
    expect(await store().completeness(V)).toMatchObject({ complete: false, problem: 'queue length 6, meta.length 5' });
  });

  it('when the meta says length 0 over an empty queue, then the version is not complete (a build never publishes one)', async () => {
    await writeVersion([], 0);
    expect(await store().completeness(V)).toMatchObject({ complete: false });
  });

  it('when the meta lacks its offset layout (offsetBuckets missing or 0), then the version is not complete: no reader could use its ring', async () => {
    await writeVersion(IDS, IDS.length);
    await s.redis.hDel(s.keys.meta(V), 'offsetBuckets');
    expect(await store().completeness(V)).toEqual({ complete: false, problem: 'meta.offsetBuckets missing: no ring a reader can use' });
    await s.redis.hSet(s.keys.meta(V), 'offsetBuckets', '0');
    expect(await store().completeness(V)).toMatchObject({ complete: false });
  });

  it('when only the shadow copy is whole, then the shadow is complete and the live version is not', async () => {
    await writeVersion(IDS, IDS.length, 'shadow');
    expect(await store().completeness(V, 'shadow')).toMatchObject({ complete: true, length: 5 });
    expect(await store().completeness(V)).toMatchObject({ complete: false, problem: 'queue length 0, meta.length missing' });
  });
});

describe('VersionStore.listVersions', () => {
  it('when live, shadow and staging metas exist, then only versions with a live meta are listed, newest first', async () => {
    await s.redis.hSet(s.keys.meta('20260723'), 'length', '1');
    await s.redis.hSet(s.keys.meta('20260725'), 'length', '1');
    await s.redis.hSet(s.keys.shadowMeta('20260726'), 'length', '1');
    await s.redis.hSet(s.keys.metaStaging('20260727', 'token'), 'length', '1');
    expect(await store().listVersions()).toEqual(['20260725', '20260723']);
  });

  it('when a key matches the meta glob but does not end in a version tag (written by hand), then it is not listed', async () => {
    for (const odd of ['20260728}', 'not-a-version', '', '2026072']) await s.redis.hSet(s.keys.meta(odd), 'length', '1');
    await s.redis.hSet(s.keys.meta('20260723'), 'length', '1');
    expect(await store().listVersions()).toEqual(['20260723']);
  });
});

describe('VersionStore.publish of a held shadow (a promote, R23)', () => {
  const lock = { key: 'lock', token: 'promote-token' };
  const publishHeld = (buildId: string) => store().publish({ version: V, length: IDS.length, buildId } as Parameters<VersionStore['publish']>[0], { ...lock, key: s.keys.buildLock(V) }, 'live', 600, 'shadow');

  beforeEach(async () => {
    await s.redis.set(s.keys.buildLock(V), lock.token);
    await writeVersion(IDS, IDS.length, 'shadow');
    await s.redis.rPush(s.keys.shadowScores(V), IDS.map(() => '1'));
    await s.redis.hSet(s.keys.shadowMeta(V), 'shadow', '1');
  });

  it('when the shadow keys are another build than the held one, then the publish is refused in its script and nothing moves', async () => {
    await expect(publishHeld('build-0')).rejects.toThrow(/BUILD_CHANGED/);
    await expect(publishHeld('build-0')).rejects.toBeInstanceOf(PublishRefusedError);
    expect(await s.redis.exists([s.keys.queue(V), s.keys.meta(V)])).toBe(0);
    expect(await s.redis.lLen(s.keys.shadowQueue(V))).toBe(IDS.length);
  });

  it('when they are the held build, then they become the live keys, marked live, in the same step', async () => {
    await publishHeld('build-1');
    expect(await s.redis.lRange(s.keys.queue(V), 0, -1)).toEqual(IDS);
    expect(await s.redis.hGet(s.keys.meta(V), 'shadow')).toBe('0');
    expect(await s.redis.exists(s.keys.shadowQueue(V))).toBe(0);
  });
});

describe('VersionStore: a build staged, published and marked', () => {
  const token = 'build-token';
  const lockOf = () => ({ key: s.keys.buildLock(V), token });
  const meta = (fields: Partial<QueueMeta> = {}): QueueMeta => ({
    version: V, length: IDS.length, generatedAt: '2026-07-24T00:00:00.000Z', startOffset: 0, candidateCount: 5, highCount: 3, newCount: 2, finalCount: 5,
    duplicateCount: 0, documentIssues: {}, blocks: [], builtAt: '2026-07-24T00:01:00.000Z', buildId: token, offsetBuckets: 4, shadow: false, ...fields,
  });
  const stageBuild = (m = meta()) =>
    store().stage(m, lockOf(), 600, async ({ queue, scores }) => {
      await queue(IDS);
      await scores(IDS.map(() => '1'));
    });
  const staged = () => [s.keys.queueStaging(V, token), s.keys.scoresStaging(V, token), s.keys.metaStaging(V, token)];

  beforeEach(() => s.redis.set(s.keys.buildLock(V), token));

  it('when a staged build is published live, then its keys become the version’s, with their expiry, and nothing staged is left', async () => {
    await stageBuild();
    for (const key of staged()) expect(await s.redis.ttl(key)).toBeGreaterThan(0);
    await store().publish(meta(), lockOf(), 'live', 900);
    expect(await store().readQueue(V)).toEqual(IDS);
    expect(await store().readQueue(V, 'live', 1, 2)).toEqual(IDS.slice(1, 3));
    expect(await store().readQueueRange(V, IDS.length, 4, 2)).toEqual(['id-4', 'id-0']);
    expect(await store().readMeta(V)).toMatchObject({ version: V, length: IDS.length, buildId: token, offsetBuckets: 4 });
    expect(await store().queueState(V)).toEqual({ length: IDS.length, ttlSeconds: expect.any(Number) });
    expect((await store().queueState(V)).ttlSeconds).toBeGreaterThan(600);
    expect(await s.redis.exists(staged())).toBe(0);
    expect(await store().queueState(V, 'shadow')).toEqual({ length: 0, ttlSeconds: -2 });
  });

  it('when a staged build is published as a shadow, then only the shadow keys are written and the live offsets keep their expiry (R20)', async () => {
    await stageBuild();
    const bucket = s.keys.offset(V, 0);
    await s.redis.hSet(bucket, 'f', '1');
    await s.redis.expire(bucket, 100);
    await s.redis.hSet(s.keys.meta(V), 'length', '5');
    await store().publish(meta({ shadow: true }), lockOf(), 'shadow', 900);
    expect(await store().readQueue(V, 'shadow')).toEqual(IDS);
    expect(await store().readMeta(V, 'shadow')).toMatchObject({ buildId: token });
    expect(await s.redis.exists(s.keys.queue(V))).toBe(0);
    expect(await s.redis.ttl(bucket)).toBeLessThanOrEqual(100);
  });

  it('when a live version is rebuilt in place, then its offset buckets get the new expiry with it', async () => {
    await writeVersion(IDS, IDS.length);
    const bucket = s.keys.offset(V, 3);
    await s.redis.hSet(bucket, 'f', '1');
    await s.redis.expire(bucket, 100);
    await stageBuild();
    await store().publish(meta(), lockOf(), 'live', 900);
    expect(await s.redis.ttl(bucket)).toBeGreaterThan(100);
  });

  it('when the build lost its lock, then the publish is refused (PublishRefusedError) and the staged keys stay; a Redis error is not taken for a refusal', async () => {
    await stageBuild();
    await s.redis.set(s.keys.buildLock(V), 'another-build');
    await expect(store().publish(meta(), lockOf(), 'live', 900)).rejects.toBeInstanceOf(PublishRefusedError);
    expect(await s.redis.exists(staged())).toBe(3);
    await s.redis.del(s.keys.buildLock(V));
    await s.redis.hSet(s.keys.buildLock(V), 'not', 'a string');
    const failure = await store().publish(meta(), lockOf(), 'live', 900).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(PublishRefusedError);
  });

  it('when a build drops its staging, then only its own keys go', async () => {
    await stageBuild();
    await s.redis.sAdd(s.keys.legacyIdsStaging(token), 'id-0');
    await s.redis.rPush(s.keys.queueStaging(V, 'other-build'), 'id-0');
    await store().dropStaging(V, lockOf());
    expect(await s.redis.exists([...staged(), s.keys.legacyIdsStaging(token)])).toBe(0);
    expect(await s.redis.exists(s.keys.queueStaging(V, 'other-build'))).toBe(1);
  });

  it('when the version is marked switched, finished and shadow, then its meta says so', async () => {
    await writeVersion(IDS, IDS.length);
    expect(await store().isFinished(V)).toBe(false);
    await store().markSwitched(V, '2026-07-24T01:00:00.000Z');
    await store().markFinished(V, '2026-07-24T01:05:00.000Z');
    expect(await store().isFinished(V)).toBe(true);
    expect(await s.redis.hmGet(s.keys.meta(V), ['switchedAt', 'completedAt'])).toEqual(['2026-07-24T01:00:00.000Z', '2026-07-24T01:05:00.000Z']);
    await store().markShadow(V, 'live', true);
    expect(await s.redis.hGet(s.keys.meta(V), 'shadow')).toBe('1');
    await store().markShadow(V, 'shadow', false);
    expect(await s.redis.hGet(s.keys.shadowMeta(V), 'shadow')).toBe('0');
  });
});

describe('VersionStore: the legacy random set (R17)', () => {
  const lock = { key: 'lock', token: 'refill-token' };

  it('when the set is refilled from a published queue, then it holds exactly the queue’s ids, swapped in whole', async () => {
    await writeVersion(IDS, IDS.length);
    await s.redis.sAdd(s.keys.legacyIds, 'old-id');
    expect(await store().legacyExists()).toBe(true);
    await store().refillLegacyFromQueue(V, lock, 600);
    expect((await s.redis.sMembers(s.keys.legacyIds)).sort()).toEqual(IDS);
    expect(await s.redis.ttl(s.keys.legacyIds)).toBeGreaterThan(0);
    const sample = await store().sampleLegacy(3);
    expect(sample.size).toBe(IDS.length);
    expect(sample.ids).toHaveLength(3);
    for (const id of sample.ids) expect(IDS).toContain(id);
  });

  it('when the refill is between its fill and its swap, then readers still see the old set', async () => {
    expect(await store().legacyExists()).toBe(false);
    await s.redis.sAdd(s.keys.legacyIds, 'old-id');
    let during: string[] = [];
    await store().refillLegacy(lock, 600, (add) => add(['id-0']).then(() => undefined), async () => {
      during = await s.redis.sMembers(s.keys.legacyIds);
    });
    expect(during).toEqual(['old-id']);
    expect(await s.redis.sMembers(s.keys.legacyIds)).toEqual(['id-0']);
  });
});
