/**
 * Video documents by id for the read path, with a short in-process cache. The cache TTL
 * (VIDEO_CACHE_MS) is the longest a taken-down video can still be served by one instance.
 */
import { LRUCache } from 'lru-cache';
import { Types } from 'mongoose';
import { ELIGIBLE_FILTER, isEligible, shuffleInPlace } from '@feed/domain';
import { unavailable } from '@feed/http';
import { inSpan } from '@feed/telemetry';
import type { VideoDoc, VideoModel } from '@feed/storage';

/** The fields the feed needs: R1's re-check, the item shape, the author for the own-video skip. */
const PUBLIC_PROJECTION = {
  title: 1, coverUrl: 1, playUrl: 1, durationSec: 1, authorId: 1, newsType: 1, status: 1, deleted: 1, reviewAt: 1,
  vip: 1, coin: 1, isAd: 1, special: 1, likeCount: 1, collectCount: 1, commentCount: 1, shareCount: 1,
  fakeLikeCount: 1, fakeCommentCount: 1, fakeShareCount: 1,
} as const;

export type CatalogVideo = Pick<VideoDoc, '_id' | keyof typeof PUBLIC_PROJECTION>;

/** One item of `vInfos`: display counts as the client shows them (real + fake), never recommend*. */
export interface VideoInfo {
  vid: string;
  title: string;
  coverUrl: string;
  playUrl: string;
  durationSec: number;
  authorId: string;
  vip: boolean;
  coin: boolean;
  isAd: boolean;
  special: boolean;
  likeCount: number;
  collectCount: number;
  commentCount: number;
  shareCount: number;
  reviewAt: string | null;
}

/** The ad endpoint picks from this many most recently approved ads, re-read every AD_POOL_TTL_MS. */
const AD_POOL_SIZE = 200;
const AD_POOL_TTL_MS = 30_000;

/** Without video documents nothing can be served: a clear 503, not a fallback. */
const videoStoreDown = (err: Error): never => {
  throw unavailable(`video store unavailable: ${err.message}`);
};

const n = (value: number | null | undefined) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

export function toVideoInfo(video: CatalogVideo): VideoInfo {
  return {
    vid: video._id.toHexString(),
    title: video.title ?? '',
    coverUrl: video.coverUrl ?? '',
    playUrl: video.playUrl ?? '',
    durationSec: n(video.durationSec),
    authorId: video.authorId ?? '',
    vip: Boolean(video.vip),
    coin: Boolean(video.coin),
    isAd: Boolean(video.isAd),
    special: Boolean(video.special),
    likeCount: Math.max(0, n(video.likeCount)) + n(video.fakeLikeCount),
    collectCount: Math.max(0, n(video.collectCount)),
    commentCount: Math.max(0, n(video.commentCount)) + n(video.fakeCommentCount),
    shareCount: Math.max(0, n(video.shareCount)) + n(video.fakeShareCount),
    reviewAt: video.reviewAt ? new Date(video.reviewAt).toISOString() : null,
  };
}

/**
 * Heap bytes of one cached entry: the lean document, its item shape and its JSON, measured with
 * `--expose-gc` over 20,000 demo videos (1,800 bytes each with 141 characters of strings; every
 * further character costs two: the document's string, which the item shares, and the JSON's).
 */
const VIDEO_ENTRY_BYTES = 1_500;
/** A remembered "no such video": the id and an empty slot. */
const MISSING_ENTRY_BYTES = 200;
/** V8 stores a string with any character above U+00FF at two bytes a character. */
const stringBytes = (value: unknown) => (typeof value === 'string' ? value.length * (/[\u0100-\uffff]/.test(value) ? 2 : 1) : 0);

export function videoEntryBytes(entry: { video: CatalogVideo | null }): number {
  const { video } = entry;
  if (!video) return MISSING_ENTRY_BYTES;
  return VIDEO_ENTRY_BYTES + 2 * (stringBytes(video.title) + stringBytes(video.coverUrl) + stringBytes(video.playUrl) + stringBytes(video.authorId));
}

export class VideoCatalog {
  /**
   * Documents by id (null: no such video), each for VIDEO_CACHE_MS, at most VIDEO_CACHE_MAX and
   * `maxBytes` (its share of API_MEMORY_BUDGET_MB); least recently used out first.
   */
  private readonly cache: LRUCache<string, { video: CatalogVideo | null }> | undefined;
  /** The item shape of each cached document, built once per document rather than per response. */
  private readonly infos = new WeakMap<CatalogVideo, VideoInfo>();
  /** Each item's JSON, serialised once: a page is then joined, not stringified field by field. */
  private readonly infoJson = new WeakMap<VideoInfo, string>();
  /** The MongoDB fallback's pool of recent videos, shared by concurrent requests while fresh. */
  private recent?: { limit: number; expiresAt: number; docs: Promise<Array<{ _id: Types.ObjectId; authorId?: string }>> };
  private adPool?: { ids: string[]; expiresAt: number };

  constructor(
    private readonly model: VideoModel,
    private readonly ttlMs: number,
    maxEntries = 100_000,
    /** Counts each id looked up in the cache: a hit or a miss (`feed_video_cache_requests_total`). */
    private readonly onLookup: (hits: number, misses: number) => void = () => undefined,
    maxBytes = 32 * 1024 * 1024,
  ) {
    this.cache = ttlMs > 0 && maxEntries > 0 && maxBytes > 0 ? new LRUCache({ max: maxEntries, ttl: ttlMs, maxSize: maxBytes, sizeCalculation: videoEntryBytes }) : undefined;
  }

  /** Estimated heap bytes held by the cache (`feed_cache_bytes{cache="video"}`). */
  cacheBytes(): number {
    return this.cache?.calculatedSize ?? 0;
  }

  /** Videos by id (missing ids are absent from the map). One MongoDB query for the cache misses. */
  async load(ids: readonly string[]): Promise<Map<string, CatalogVideo>> {
    const found = new Map<string, CatalogVideo>();
    const misses: string[] = [];
    for (const id of ids) {
      const hit = this.cache?.get(id);
      if (hit) {
        if (hit.video) found.set(id, hit.video);
      } else misses.push(id);
    }
    if (this.cache) this.onLookup(ids.length - misses.length, misses.length);
    if (misses.length > 0) {
      const docs = await inSpan('video lookup', { 'feed.videos': misses.length }, () =>
        this.model
          .find({ _id: { $in: misses.map((id) => new Types.ObjectId(id)) } })
          .select(PUBLIC_PROJECTION)
          .lean<CatalogVideo[]>()
          .catch(videoStoreDown),
      );
      const byId = new Map(docs.map((d) => [d._id.toHexString(), d]));
      for (const id of misses) {
        const video = byId.get(id) ?? null;
        this.cache?.set(id, { video });
        if (video) found.set(id, video);
      }
    }
    return found;
  }

  infoOf(video: CatalogVideo): VideoInfo {
    let info = this.infos.get(video);
    if (!info) {
      info = toVideoInfo(video);
      this.infos.set(video, info);
    }
    return info;
  }

  jsonOf(info: VideoInfo): string {
    let json = this.infoJson.get(info);
    if (json === undefined) {
      json = JSON.stringify(info);
      this.infoJson.set(info, json);
    }
    return json;
  }

  /** The items for `ids` that may be served (R1 re-checked), in `ids` order, skipping `exceptAuthorId`'s own. */
  async servable(ids: readonly string[], exceptAuthorId?: string): Promise<VideoInfo[]> {
    const videos = await this.load(ids);
    return ids.flatMap((id) => {
      const video = videos.get(id);
      return video && isEligible(video) && (exceptAuthorId === undefined || video.authorId !== exceptAuthorId) ? [this.infoOf(video)] : [];
    });
  }

  /** Ids of the `limit` most recently approved servable videos, without `exceptAuthorId`'s own (the MongoDB fallback). */
  async recentServableIds(limit: number, exceptAuthorId?: string): Promise<string[]> {
    // During a Redis outage every request lands here: one query per cache period, not one each.
    const now = Date.now();
    if (!this.recent || this.recent.expiresAt <= now || this.recent.limit !== limit) {
      const query = this.model
        .find(ELIGIBLE_FILTER)
        .sort({ reviewAt: -1 })
        .limit(limit)
        .select({ _id: 1, authorId: 1 })
        .lean<Array<{ _id: Types.ObjectId; authorId?: string }>>()
        .catch(videoStoreDown);
      this.recent = { limit, expiresAt: now + this.ttlMs, docs: query };
      query.catch(() => (this.recent = undefined));
    }
    const recent = await this.recent.docs;
    return recent.filter((v) => exceptAuthorId === undefined || v.authorId !== exceptAuthorId).map((v) => v._id.toHexString());
  }

  /** Up to `pageSize` servable ads (R1 re-checked), picked at random from the most recent ones. */
  async randomAds(pageSize: number): Promise<VideoInfo[]> {
    const now = Date.now();
    if (!this.adPool || this.adPool.expiresAt <= now) {
      const ads = await this.model
        .find({ ...ELIGIBLE_FILTER, isAd: true })
        .sort({ reviewAt: -1 })
        .limit(AD_POOL_SIZE)
        .select({ _id: 1 })
        .lean<Array<{ _id: Types.ObjectId }>>()
        .catch(videoStoreDown);
      this.adPool = { ids: ads.map((ad) => ad._id.toHexString()), expiresAt: now + AD_POOL_TTL_MS };
    }
    return this.servable(shuffleInPlace([...this.adPool.ids], Math.random).slice(0, pageSize));
  }

  async get(id: string): Promise<CatalogVideo | undefined> {
    return (await this.load([id])).get(id);
  }
}
