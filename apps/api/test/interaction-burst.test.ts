/**
 * Interactions against a real API process (R3, issue 49), production's MongoDB budget
 * (MONGO_DEADLINE_MS=1000): a burst of likes on one video with the process SIGKILLed in the middle
 * converges exactly after the repair job. Users double-tapping one video with the 1 s budget and
 * no retry: `pnpm test:reliability`'s toggles group (200 users with --quick, 500 otherwise).
 */
import { demoVideo } from '@feed/demo-data';
import { interactionModels, repairPendingCounters, videoModel, type InteractionModels, type VideoModel } from '@feed/storage';
import { exitWithin, tsx } from '../../../tools/support/processes';
import { bearer } from '../../../test/support/feed-fixtures';
import { startTestDeployable } from '../../../test/support/deployables';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('interaction-burst');
let videos: VideoModel;
let records: InteractionModels;

beforeAll(async () => {
  videos = videoModel(s.mongo);
  records = interactionModels(s.mongo);
  await Promise.all([videos.init(), records.likes.init()]);
});

async function startApi(env: Record<string, string> = {}) {
  const api = await startTestDeployable(tsx('apps/api/src/main.ts'), { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, { MONGO_DEADLINE_MS: '1000', LOG_LEVEL: 'warn', ...env });
  s.disposeAfter(() => api.process.stop('SIGKILL'));
  return api;
}

const counters = async (vid: string) => {
  const doc = await videos.findById(vid).select({ recommendLikeCount: 1, likeCount: 1, _id: 0 }).lean();
  return { recommendLikeCount: doc?.recommendLikeCount, likeCount: doc?.likeCount };
};

/** POSTs a like of `vid` as `user`: the status, 0 when no answer came. */
async function like(base: string, user: string, vid: string): Promise<number> {
  const res = await fetch(`${base}/api/app/vid/like`, { method: 'POST', headers: { ...bearer(user), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid }) }).catch(() => null);
  await res?.arrayBuffer().catch(() => undefined);
  return res?.status ?? 0;
}

it('when the API is SIGKILLed in the middle of a burst of likes on one video, then after the repair both counters equal the like records, and every like answered 2xx has its record', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  const api = await startApi();
  const answered: string[] = [];
  let sent = 0;
  let killed = false;
  await Promise.all(
    Array.from({ length: 40 }, async () => {
      while (!killed) {
        const user = `burst-${sent++}`;
        if ((await like(api.base, user, vid)) === 200) answered.push(user);
        if (answered.length >= 300 && !killed) {
          killed = true;
          await api.process.stop('SIGKILL');
        }
      }
    }),
  );
  const likes = await records.likes.countDocuments({ videoId: vid });
  // What the tallies had counted when the process died (printed: the repair's share of the work).
  console.log(`SIGKILL burst: ${sent} likes sent, ${answered.length} answered 2xx, ${likes} records; counters at the kill ${JSON.stringify(await counters(vid))}`);
  await repairPendingCounters(videos, records, { minAgeMs: 0 });
  expect(await counters(vid)).toEqual({ recommendLikeCount: likes, likeCount: likes });
  expect(await records.likes.countDocuments({ videoId: vid, userId: { $in: answered } })).toBe(answered.length);
  expect(await records.likes.countDocuments({ videoId: vid, dirty: true })).toBe(0);
}, 120_000);

it('when the API is sent SIGTERM right after a burst of likes on one video is answered, then it exits 0 with both counters equal to the like records, no repair needed', async () => {
  const [video] = await videos.insertMany([demoVideo()]);
  const vid = video._id.toHexString();
  // No propagation delay: the stores close right after the drain, while the burst's tallies are due.
  const api = await startApi({ SHUTDOWN_DELAY_MS: '0' });
  for (let round = 0; round < 3; round++) {
    const statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => like(api.base, `term-${round}-${i}`, vid)));
    expect(statuses.every((status) => status === 200)).toBe(true);
  }
  api.process.child.kill('SIGTERM');
  expect(await exitWithin(api.process, 'the API after SIGTERM', 20_000)).toBe(0);
  const likes = await records.likes.countDocuments({ videoId: vid });
  expect(likes).toBe(120);
  expect(await counters(vid)).toEqual({ recommendLikeCount: likes, likeCount: likes });
}, 120_000);
