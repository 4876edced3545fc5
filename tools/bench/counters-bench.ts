/**
 * `pnpm bench counters [--likes N] [--concurrency C]`: the cost of one like (SPEC R3) through the
 * interaction service over the real mongoose stack, against the server's limit measured in the
 * same run: C at once on ONE video, each a bare record upsert on its unique key plus one `$inc` on
 * the video. Then the service, one like at a time over 100 videos (MongoDB commands per like, by
 * the driver's command monitoring), and C at once on one video. Likes/s and commands run from the
 * first like until both counters are exact (the tallies behind the answers included). Ends with
 * `contended_vs_limit=… p99_vs_limit=… commands_per_like=…`. `--double-taps U` then runs U users
 * toggling like on one video and the repair job (`--likes 0` skips the like phases). Uses MONGO_URL when set.
 */
import mongoose, { Types } from 'mongoose';
import { InteractionService, VideoCatalog } from '@feed/api';
import { loadSetting } from '@feed/config';
import { AppError } from '@feed/http';
import { CounterTallies, interactionModels, repairPendingCounters, RequestBudget, videoModel, type InteractionModels, type VideoModel } from '@feed/storage';
import { percentile } from '../support/percentile';
import { argValue, benchMongo } from './support';

/** No budget to speak of: the bench measures the protocol, not the deadline. */
const budget = () => new RequestBudget({ redisMs: 1_000, mongoMs: 60_000 });

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
    const ids = Array.from({ length: 102 }, () => new Types.ObjectId());
    await videos.insertMany(ids.map((_id) => ({ _id, status: 'approved', newsType: 'short', title: 'bench' })));
    const tallies = new CounterTallies({ videos, records, onError: (kind, err) => console.error(`tally of ${kind} failed:`, err) });
    // The production API's video cache (VIDEO_CACHE_MS): a like's eligibility read is the feed's cached document.
    const service = new InteractionService({ catalog: new VideoCatalog({ model: videos, ttlMs: loadSetting('videoCacheMs', {}) }), records, tallies });
    const exact = async (videoId: Types.ObjectId, want: number) => {
      const doc = await videos.findById(videoId).select({ likeCount: 1, recommendLikeCount: 1 }).lean();
      return doc?.likeCount === want && doc?.recommendLikeCount === want;
    };

    /** `like(i)` for i < likes, `parallel` at a time; then waits for `settled` (the counters exact). */
    const run = async (label: string, like: (i: number) => Promise<unknown>, parallel: number, settled: () => Promise<boolean>) => {
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
              await like(i);
            } catch (err) {
              const status = err instanceof AppError ? String(err.status) : `500 ${err instanceof Error ? err.message.slice(0, 80) : String(err)}`;
              failures.set(status, (failures.get(status) ?? 0) + 1);
            }
            latencies.push(performance.now() - t);
          }
        }),
      );
      const answered = performance.now();
      await tallies.idle();
      const ok = await settled();
      const seconds = (performance.now() - started) / 1000;
      latencies.sort((a, b) => a - b);
      const perLike = (commands - commandsBefore) / likes;
      const failed = [...failures.values()].reduce((a, b) => a + b, 0);
      const p99 = percentile(latencies, 99);
      const rate = likes / seconds;
      console.log(
        `${label.padEnd(44)} ${perLike.toFixed(2).padStart(6)} commands/like  p50 ${percentile(latencies, 50).toFixed(2)} ms  p99 ${p99.toFixed(2)} ms  ${rate.toFixed(0)} likes/s (counters exact ${((performance.now() - answered) / 1000).toFixed(2)} s after the last answer: ${ok ? 'exact' : 'WRONG'})  ${likes - failed}/${likes} answered 2xx`,
      );
      for (const [status, n] of failures) console.log(`  not 2xx: ${n} x ${status}`);
      const names = [...byName].sort(([, a], [, b]) => b.n - a.n);
      console.log(`  by command: ${names.map(([name, { n, ms }]) => `${name} ${(n / likes).toFixed(2)}/like ${(ms / n).toFixed(1)} ms`).join(', ')}`);
      if (!ok || failed > 0) throw new Error(`${label}: counters not exact or answers not 2xx (above)`);
      return { perLike, rate, p99 };
    };
    if (likes > 0) {
      const [limitVideo, hotVideo] = ids;
      const limit = await run(
        `limit: ${concurrency} at once, upsert + $inc`,
        async (i) => {
          await records.likes.updateOne({ userId: `limit-user-${i}`, videoId: limitVideo }, { $setOnInsert: { active: true, v: 1, dirty: true, changedAt: new Date() } }, { upsert: true });
          await videos.updateOne({ _id: limitVideo }, { $inc: { likeCount: 1, recommendLikeCount: 1 } });
        },
        concurrency,
        () => exact(limitVideo, likes),
      );
      const serial = await run('one at a time, 100 videos', (i) => service.like(ids[2 + (i % 100)].toHexString(), `serial-user-${i}`, budget()), 1, async () => {
        for (let v = 0; v < 100; v++) if (!(await exact(ids[2 + v], Math.floor(likes / 100) + (v < likes % 100 ? 1 : 0)))) return false;
        return true;
      });
      const contended = await run(`${concurrency} at once, one video`, (i) => service.like(hotVideo.toHexString(), `hot-user-${i}`, budget()), concurrency, () => exact(hotVideo, likes));
      console.log(`contended_vs_limit=${(contended.rate / limit.rate).toFixed(2)} p99_vs_limit=${(contended.p99 / limit.p99).toFixed(2)} commands_per_like=${serial.perLike.toFixed(2)}`);
    }
    if (doubleTaps > 0) await runDoubleTaps(service, tallies, videos, records, doubleTaps);
  } finally {
    await conn.close();
    mongo.stop();
  }
}

/** The double-tap scenario of issue 33 on a video of its own, then the repair job. */
async function runDoubleTaps(service: InteractionService, tallies: CounterTallies, videos: VideoModel, records: InteractionModels, users: number): Promise<void> {
  const videoId = new Types.ObjectId();
  await videos.insertMany([{ _id: videoId, status: 'approved', newsType: 'short', title: 'double taps' }]);
  const vid = videoId.toHexString();
  const failures: string[] = [];
  let requests = 0;
  const send = async (action: 'like' | 'unlike', user: string) => {
    requests++;
    try {
      await service[action](vid, user, budget());
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
  await tallies.idle();
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
