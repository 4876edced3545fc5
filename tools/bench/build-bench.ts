/**
 * `pnpm bench build --videos N [--fresh M]`: one daily build over N videos. Prints each phase,
 * videos/s, peak RSS of the build process, and the Redis write phase against the limit: a
 * pipelined RPUSH of the same ids. Last line: `videos=<n> seconds=<s> write/limit=<x> peak_rss_mb=<m>`.
 */
import mongoose from 'mongoose';
import { createLogger } from '@feed/logger';
import { videoModel } from '@feed/storage';
import { runDailyBuild } from '@feed/worker';
import { argValue, benchMongo, benchRedis, rssSampler, seconds, seedInChild } from './support';

export async function runBuildBench(): Promise<void> {
  const videos = Number(argValue('videos', '100000'));
  const fresh = Number(argValue('fresh', String(Math.round(videos * 0.01))));
  if (!Number.isInteger(videos) || videos <= 0) throw new Error('--videos must be a positive integer');
  const mongo = await benchMongo();
  const { redis, keys, cleanup } = await benchRedis();
  const connection = await mongoose.createConnection(mongo.uri).asPromise();
  try {
    const model = videoModel(connection);
    await model.init();
    const seedStart = Date.now();
    // Seeded by a child process, so this process's RSS is the build's alone.
    await seedInChild(mongo.uri, videos, fresh);
    console.log(`seeded ${videos + fresh} videos in ${seconds(Date.now() - seedStart)} s (not part of the build)`);

    const rss = rssSampler();
    const started = Date.now();
    const result = await runDailyBuild({
      redis,
      keys,
      videos: model,
      logger: createLogger({ silent: true }),
      businessTimeZone: 'Asia/Shanghai',
      keyTtlHours: 1,
      lockTtlMs: 30 * 60_000,
    });
    const total = (Date.now() - started) / 1000;
    rss.stop();
    const ids = await redis.lRange(keys.queue(result.version), 0, -1);
    const length = ids.length;

    // The limit: the same ids pushed with the build's batching and pipelining, nothing else.
    const limitKey = keys.queue('limit');
    const limitStart = Date.now();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < ids.length; i += 5000) writes.push(redis.rPush(limitKey, ids.slice(i, i + 5000)));
    await Promise.all(writes);
    const limit = (Date.now() - limitStart) / 1000;
    await redis.del(limitKey);

    const t = result.timings;
    console.log('phase        seconds');
    for (const phase of ['lock', 'read', 'assemble', 'write', 'verify', 'switch', 'legacy', 'scores'] as const) {
      console.log(`${phase.padEnd(12)} ${(t[phase] ?? 0).toFixed(3)}`);
    }
    console.log(`queue length ${length}, high ${result.meta?.highCount}, new ${result.meta?.newCount}`);
    console.log(`videos/s (whole build) ${Math.round(videos / total)}; redis write ${t.write?.toFixed(3)} s vs pipelined RPUSH limit ${limit.toFixed(3)} s`);
    console.log(`videos=${videos + fresh} seconds=${total.toFixed(2)} write/limit=${((t.write ?? 0) / Math.max(limit, 0.001)).toFixed(2)} peak_rss_mb=${rss.peakMb()}`);
  } finally {
    await connection.close();
    await cleanup();
    mongo.stop();
  }
}

