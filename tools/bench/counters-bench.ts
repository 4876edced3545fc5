/**
 * `pnpm bench counters [--likes N] [--concurrency C]`: the cost of one like (SPEC R3) through the
 * interaction service over the real mongoose stack: MongoDB commands per like, counted by the
 * driver's command monitoring, and the time per like, first one like at a time over many videos,
 * then C at once on ONE video (the contended case of a viral video: `--concurrency 200`). Prints
 * per phase the commands per like (and by command name, with the server time they took), p50/p99,
 * likes/s and the answers that were not a success (a 2xx over HTTP: every one must be), then both
 * counters of the contended video against the likes sent. `--double-taps U` then runs U users
 * toggling like on one video (like and unlike at once, then like twice at once, three times over;
 * then every other user's last action an unlike) and the repair job: prints the answers not 2xx
 * and both counters against the users who ever liked and those whose last action was a like
 * (`--likes 0` skips the like phases). Uses MONGO_URL when set.
 */
import mongoose, { Types } from 'mongoose';
import { InteractionService, tallied } from '@feed/api';
import { AppError } from '@feed/http';
import { interactionModels, repairPendingCounters, videoModel, type InteractionModels, type VideoModel } from '@feed/storage';
import { percentile } from '../support/percentile';
import { argValue, benchMongo } from './support';

export async function runCountersBench(): Promise<void> {
  const likes = Number(argValue('likes', '2000'));
  const concurrency = Number(argValue('concurrency', '40'));
  const doubleTaps = Number(argValue('double-taps', '0'));
  const mongo = await benchMongo();
  const conn = await mongoose.createConnection(mongo.uri, { monitorCommands: true }).asPromise();
  try {
    let commands = 0;
    const byName = new Map<string, { n: number; ms: number }>();
    conn.getClient().on('commandStarted', () => commands++);
    conn.getClient().on('commandSucceeded', (event) => {
      const { n, ms } = byName.get(event.commandName) ?? { n: 0, ms: 0 };
      byName.set(event.commandName, { n: n + 1, ms: ms + event.duration });
    });
    const videos = videoModel(conn);
    const records = interactionModels(conn);
    await Promise.all([videos.init(), ...Object.values(records).map((model) => model.init())]);
    const ids = Array.from({ length: 101 }, () => new Types.ObjectId());
    await videos.insertMany(ids.map((_id) => ({ _id, status: 'approved', newsType: 'short', title: 'bench' })));
    const service = new InteractionService(videos, records);

    const run = async (label: string, videoOf: (i: number) => Types.ObjectId, parallel: number) => {
      const latencies: number[] = [];
      const failures = new Map<string, number>();
      const commandsBefore = commands;
      byName.clear();
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (next < likes) {
            const i = next++;
            const t = performance.now();
            try {
              await tallied(service.like(videoOf(i).toHexString(), `${label}-user-${i}`));
            } catch (err) {
              const status = err instanceof AppError ? String(err.status) : `500 ${err instanceof Error ? err.message.slice(0, 80) : String(err)}`;
              failures.set(status, (failures.get(status) ?? 0) + 1);
            }
            latencies.push(performance.now() - t);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      latencies.sort((a, b) => a - b);
      const perLike = (commands - commandsBefore) / likes;
      const failed = [...failures.values()].reduce((a, b) => a + b, 0);
      console.log(
        `${label.padEnd(36)} ${perLike.toFixed(2).padStart(6)} commands/like  p50 ${percentile(latencies, 50).toFixed(2)} ms  p99 ${percentile(latencies, 99).toFixed(2)} ms  ${(likes / seconds).toFixed(0)} likes/s  ${likes - failed}/${likes} answered 2xx`,
      );
      for (const [status, n] of failures) console.log(`  not 2xx: ${n} x ${status}`);
      const names = [...byName].sort(([, a], [, b]) => b.n - a.n);
      console.log(`  by command: ${names.map(([name, { n, ms }]) => `${name} ${(n / likes).toFixed(2)}/like ${(ms / n).toFixed(1)} ms`).join(', ')}`);
      return { perLike, failed };
    };
    if (likes > 0) {
      const serial = await run('one at a time, 100 videos', (i) => ids[1 + (i % 100)], 1);
      const contended = await run(`${concurrency} at once, one video`, () => ids[0], concurrency);
      const counted = await videos.findById(ids[0]).select({ likeCount: 1, recommendLikeCount: 1 }).lean();
      const exact = counted?.likeCount === likes && counted?.recommendLikeCount === likes;
      console.log(`one video: likeCount=${counted?.likeCount} recommendLikeCount=${counted?.recommendLikeCount} (want ${likes}: ${exact ? 'exact' : 'WRONG'})`);
      console.log(`commands_per_like=${serial.perLike.toFixed(2)} commands_per_like_contended=${contended.perLike.toFixed(2)} not_2xx=${serial.failed + contended.failed}`);
      if (!exact || serial.failed + contended.failed > 0) throw new Error('counters not exact or answers not 2xx (above)');
    }
    if (doubleTaps > 0) await runDoubleTaps(service, videos, records, doubleTaps);
  } finally {
    await conn.close();
    mongo.stop();
  }
}

/** The double-tap scenario of issue 33 on a video of its own, then the repair job. */
async function runDoubleTaps(service: InteractionService, videos: VideoModel, records: InteractionModels, users: number): Promise<void> {
  const videoId = new Types.ObjectId();
  await videos.insertMany([{ _id: videoId, status: 'approved', newsType: 'short', title: 'double taps' }]);
  const vid = videoId.toHexString();
  const failures: string[] = [];
  let requests = 0;
  const send = async (action: 'like' | 'unlike', user: string) => {
    requests++;
    try {
      await tallied(service[action](vid, user));
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) failures.push(err instanceof Error ? err.message.slice(0, 120) : String(err));
    }
  };
  const names = Array.from({ length: users }, (_, i) => `double-tap-${i}`);
  const started = performance.now();
  for (let round = 0; round < 3; round++) {
    await Promise.all(
      names.map(async (user) => {
        await Promise.all([send('like', user), send('unlike', user)]);
        await Promise.all([send('like', user), send('like', user)]);
      }),
    );
  }
  await Promise.all(names.map((user, i) => (i % 2 === 0 ? send('like', user) : send('like', user).then(() => send('unlike', user)))));
  const seconds = (performance.now() - started) / 1000;
  await repairPendingCounters(videos, records, { minAgeMs: 0 });
  const counted = await videos.findById(videoId).select({ likeCount: 1, recommendLikeCount: 1 }).lean();
  const lastLiked = Math.ceil(users / 2);
  const exact = counted?.recommendLikeCount === users && counted?.likeCount === lastLiked;
  console.log(
    `double taps: ${users} users, ${requests} requests in ${seconds.toFixed(1)} s, ${failures.length} answers 5xx; recommendLikeCount=${counted?.recommendLikeCount} (want ${users}) likeCount=${counted?.likeCount} (want ${lastLiked}): ${exact ? 'exact' : 'WRONG'}`,
  );
  for (const failure of new Set(failures)) console.log(`  5xx: ${failure}`);
  if (!exact || failures.length > 0) throw new Error('double taps: counters not exact or answers 5xx (above)');
}
