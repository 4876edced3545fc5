/**
 * `pnpm bench fallback [--videos N] [--queries Q] [--max-time-ms M]`: the feed's MongoDB fallback
 * (SPEC R17's last strategy) over N videos: the time of its one bounded query (R1's filter sorted
 * by reviewAt, limit, maxTimeMS) as the API makes it, each one cold, and how many missed the
 * bound. The embedded server runs in its own process (uses MONGO_URL when set).
 */
import { VideoCatalog } from '@feed/api';
import { MongoBudget, videoModel } from '@feed/storage';
import { percentile } from '../support/percentile';
import { argValue, benchMongo, seedInChild } from './support';
import mongoose from 'mongoose';

export async function runFallbackBench(): Promise<void> {
  const videos = Number(argValue('videos', '150000'));
  const queries = Number(argValue('queries', '10'));
  const maxTimeMs = Number(argValue('max-time-ms', '1000'));
  const mongo = await benchMongo();
  const conn = await mongoose.createConnection(mongo.uri).asPromise();
  try {
    const seeding = performance.now();
    await seedInChild(mongo.uri, videos, Math.round(videos / 100));
    process.stdout.write(`seeded ${videos} videos in ${((performance.now() - seeding) / 1000).toFixed(1)} s\n`);
    const model = videoModel(conn);
    // No cache: every query is the one a request makes when the pool has expired.
    const catalog = new VideoCatalog({ model, ttlMs: 0, maxEntries: 0, mongoDeadlineMs: maxTimeMs });
    const latencies: number[] = [];
    let missed = 0;
    for (let i = 0; i < queries; i++) {
      const started = performance.now();
      try {
        const ids = await catalog.recentServableIds(200, new MongoBudget(maxTimeMs));
        if (ids.length === 0) throw new Error('the fallback found no video');
      } catch (err) {
        missed++;
        process.stdout.write(`query ${i + 1}: ${err instanceof Error ? err.message : String(err)}\n`);
      }
      latencies.push(performance.now() - started);
    }
    latencies.sort((a, b) => a - b);
    const ms = (q: number) => percentile(latencies, q).toFixed(1);
    process.stdout.write(`fallback query over ${videos} videos: p50 ${ms(50)} ms, p99 ${ms(99)} ms, max ${Math.max(...latencies).toFixed(1)} ms; ${missed}/${queries} over the ${maxTimeMs} ms bound\n`);
  } finally {
    await conn.close();
    mongo.stop();
  }
}
