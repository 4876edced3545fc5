/**
 * R10: a worker killed (SIGKILL, a real process) between any two commands of the publish sequence
 * leaves either the old or the new version whole: current names a version whose queue and meta
 * both exist, agree on the length and expire; the next build then completes the day.
 */
import { videoModel, type VideoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { startProcess, tsx } from '../../../tools/support/processes';
import { runDailyBuild, type BuildDeps, type PublishPoint } from '../src/daily-build/daily-build';
import { useTestServices } from '../../../test/support/services';
import { testBuildDeps } from '../../../test/support/build-deps';

const YESTERDAY = new Date('2026-07-23T06:00:00+08:00');
const TODAY = new Date('2026-07-24T06:00:00+08:00');

const s = useTestServices('publish-crash');
let videos: VideoModel;
let deps: BuildDeps;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  await videos.init();
  await seedVideos(videos, { videos: 300, fresh: 10, now: TODAY, seed: 3 });
});

beforeEach(() => {
  deps = testBuildDeps(s, videos);
});

/** Runs today's build in a child process that kills itself at `point`; resolves with how it ended. */
async function buildKilledAt(point: PublishPoint): Promise<NodeJS.Signals | number | null> {
  const child = startProcess(tsx('apps/worker/test/support/build-killed-at.ts', point), {
    NODE_ENV: 'test',
    REDIS_URL: s.config.redisUrl,
    MONGO_URL: s.config.mongoUrl!,
    REDIS_KEY_PREFIX: s.prefix,
    BUILD_AT: TODAY.toISOString(),
  });
  return new Promise((resolve) =>
    child.child.once('exit', (code, signal) => {
      // Anything but the kill: say why, or the assertion below shows only an exit code.
      if (signal !== 'SIGKILL') console.error(`build-killed-at ${point} exited ${signal ?? code}:\n${child.output.join('').slice(-2000)}`);
      resolve(signal ?? code);
    }),
  );
}

/** The version current names, checked whole: queue and meta present, same length, both expiring. */
async function wholeCurrent(): Promise<string> {
  const current = (await s.redis.get(s.keys.current))!;
  const [length, metaLength, queueTtl, metaTtl] = await Promise.all([
    s.redis.lLen(s.keys.queue(current)),
    s.redis.hGet(s.keys.meta(current), 'length'),
    s.redis.ttl(s.keys.queue(current)),
    s.redis.ttl(s.keys.meta(current)),
  ]);
  expect(length).toBeGreaterThan(0);
  expect(Number(metaLength)).toBe(length);
  expect(queueTtl).toBeGreaterThan(0);
  expect(metaTtl).toBeGreaterThan(0);
  return current;
}

describe.each<PublishPoint>(['before-publish', 'after-publish', 'after-switch', 'legacy-staged', 'after-legacy'])('a worker killed at %s', (point) => {
  beforeEach(async () => {
    expect((await runDailyBuild(deps, { at: YESTERDAY, switch: true, force: true })).status).toBe('built');
  });

  it('when it is killed, then current is the old or the new version whole, and the next build completes the day', async () => {
    const oldQueue = await s.redis.lRange(s.keys.queue('20260723'), 0, -1);
    expect(await buildKilledAt(point)).toBe('SIGKILL');
    const current = await wholeCurrent();
    expect(['20260723', '20260724']).toContain(current);
    if (point === 'before-publish' || point === 'after-publish') expect(current).toBe('20260723');
    expect(await s.redis.lRange(s.keys.queue('20260723'), 0, -1)).toEqual(oldQueue);
    // Whatever the killed build staged expires on its own; at the points where it has staged keys
    // (the queue's before its publish, the legacy set's before its RENAME), there are some to check.
    const staged: string[] = [];
    for await (const batch of s.redis.scanKeys(`*${s.prefix}*staging*`)) staged.push(...batch);
    if (point === 'before-publish' || point === 'legacy-staged') expect(staged.length).toBeGreaterThan(0);
    for (const key of staged) expect({ key, expires: (await s.redis.ttl(key)) > 0 }).toEqual({ key, expires: true });

    // The killed build's lock is left behind until it expires; the next worker's build runs after it.
    await s.redis.del(s.keys.buildLock('20260724'));
    const retry = await runDailyBuild(deps, { at: TODAY });
    expect(['built', 'already-current']).toContain(retry.status);
    expect(await wholeCurrent()).toBe('20260724');
    expect(await s.redis.exists(s.keys.legacyIds)).toBe(1);
  });
});
