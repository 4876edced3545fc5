/**
 * `pnpm bench counters [--likes N] [--concurrency C]`: the cost of one like (SPEC R3) through the
 * interaction service over the real mongoose stack: MongoDB commands per like, counted by the
 * driver's command monitoring, and the time per like, first one like at a time over many videos,
 * then C at once on ONE video (the contended case of a viral video). Uses MONGO_URL when set.
 */
import mongoose, { Types } from 'mongoose';
import { InteractionService } from '@feed/api';
import { interactionModels, videoModel } from '@feed/storage';
import { percentile } from '../support/percentile';
import { argValue, benchMongo } from './support';

export async function runCountersBench(): Promise<void> {
  const likes = Number(argValue('likes', '2000'));
  const concurrency = Number(argValue('concurrency', '40'));
  const mongo = await benchMongo();
  const conn = await mongoose.createConnection(mongo.uri, { monitorCommands: true }).asPromise();
  try {
    let commands = 0;
    conn.getClient().on('commandStarted', () => commands++);
    const videos = videoModel(conn);
    const records = interactionModels(conn);
    await Promise.all([videos.init(), ...Object.values(records).map((model) => model.init())]);
    const ids = Array.from({ length: 101 }, () => new Types.ObjectId());
    await videos.insertMany(ids.map((_id) => ({ _id, status: 'approved', newsType: 'short', title: 'bench' })));
    const service = new InteractionService(videos, records);

    const run = async (label: string, videoOf: (i: number) => Types.ObjectId, parallel: number) => {
      const latencies: number[] = [];
      const commandsBefore = commands;
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (next < likes) {
            const i = next++;
            const t = performance.now();
            await service.like(videoOf(i).toHexString(), `${label}-user-${i}`);
            latencies.push(performance.now() - t);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      latencies.sort((a, b) => a - b);
      const perLike = (commands - commandsBefore) / likes;
      console.log(
        `${label.padEnd(36)} ${perLike.toFixed(2).padStart(6)} commands/like  p50 ${percentile(latencies, 50).toFixed(2)} ms  p99 ${percentile(latencies, 99).toFixed(2)} ms  ${(likes / seconds).toFixed(0)} likes/s`,
      );
      return perLike;
    };
    const serial = await run('one at a time, 100 videos', (i) => ids[1 + (i % 100)], 1);
    const contended = await run(`${concurrency} at once, one video`, () => ids[0], concurrency);
    const counted = await videos.findById(ids[0]).select({ likeCount: 1, recommendLikeCount: 1 }).lean();
    console.log(`one video: likeCount=${counted?.likeCount} recommendLikeCount=${counted?.recommendLikeCount} (want ${likes})`);
    console.log(`commands_per_like=${serial.toFixed(2)} commands_per_like_contended=${contended.toFixed(2)}`);
  } finally {
    await conn.close();
    mongo.stop();
  }
}
