/**
 * The version store's one definition of "complete" (R10, R21, R22) over a real Redis: the
 * controller repairs, the queue copies discard and the inspector flags exactly what it calls
 * incomplete. Keys are written by hand, as a crash or an expiry would leave them.
 */
import { VersionStore } from '../src';
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
