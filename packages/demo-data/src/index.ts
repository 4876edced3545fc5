/** Demo and test data (a development package: no deployable depends on it): approved short videos with varied counters and review times. */
import { Types } from 'mongoose';
import { seededRandom } from '@feed/domain';
import type { VideoDoc, VideoModel } from '@feed/storage';

const DAY_MS = 24 * 60 * 60 * 1000;
const SEED_BATCH = 5000;

export interface SeedOptions {
  /** Videos approved more than a day before `now` (the high pool). */
  videos: number;
  /** Videos approved within the last 24 h (the new pool). */
  fresh?: number;
  now?: Date;
  /** Deterministic counters from this seed. */
  seed?: number;
}

export function demoVideo(overrides: Partial<VideoDoc> = {}): Partial<VideoDoc> {
  const _id = overrides._id ?? new Types.ObjectId();
  return {
    _id,
    title: `Demo video ${_id.toHexString().slice(-6)}`,
    coverUrl: `https://cdn.example.com/cover/${_id.toHexString()}.jpg`,
    playUrl: `https://cdn.example.com/play/${_id.toHexString()}.m3u8`,
    durationSec: 15,
    authorId: 'author-1',
    newsType: 'short',
    status: 'approved',
    deleted: false,
    reviewAt: new Date(Date.now() - 10 * DAY_MS),
    ...overrides,
  };
}

/** Inserts `videos` old and `fresh` new approved short videos; returns their ids. */
export async function seedVideos(model: VideoModel, options: SeedOptions): Promise<string[]> {
  const now = (options.now ?? new Date()).getTime();
  // The queue shuffle's seeded PRNG: for one seed, titles, counters and review times are the same
  // on every machine (the ObjectIds are fresh each time).
  const random = seededRandom(`demo-data:${options.seed ?? 42}`, 0);
  const total = options.videos + (options.fresh ?? 0);
  const ids: string[] = [];
  // Generated and inserted a batch at a time: a million demo videos never sit in memory at once.
  for (let start = 0; start < total; start += SEED_BATCH) {
    const batch: Partial<VideoDoc>[] = [];
    for (let i = start; i < Math.min(total, start + SEED_BATCH); i++) {
      const isFresh = i >= options.videos;
      const likes = Math.floor(random() * 500);
      batch.push(
        demoVideo({
          authorId: `author-${Math.floor(random() * 50)}`,
          durationSec: 5 + Math.floor(random() * 55),
          reviewAt: new Date(isFresh ? now - Math.floor(random() * (DAY_MS - 60_000)) : now - DAY_MS - 60_000 - Math.floor(random() * 30 * DAY_MS)),
          likeCount: likes, collectCount: Math.floor(likes / 4), commentCount: Math.floor(likes / 10), shareCount: Math.floor(likes / 20),
          recommendLikeCount: likes, recommendCollectCount: Math.floor(likes / 4), recommendCommentCount: Math.floor(likes / 10), recommendShareCount: Math.floor(likes / 20),
          fakeLikeCount: Math.floor(random() * 1000),
          vip: random() < 0.05,
          coin: random() < 0.05,
          special: random() < 0.02,
        }),
      );
    }
    await model.insertMany(batch, { lean: true });
    for (const d of batch) ids.push((d._id as Types.ObjectId).toHexString());
  }
  return ids;
}
