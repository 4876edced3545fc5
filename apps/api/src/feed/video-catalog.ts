/** Video documents by id for the read path, cached in-process for VIDEO_CACHE_MS: the longest a taken-down video stays served. */
import { LRUCache } from 'lru-cache';
import { ELIGIBLE_FILTER, isEligible, isoDate, shuffleInPlace } from '@feed/domain';
import { AppError, unavailable } from '@feed/http';
import { logger } from '@feed/logger';
import { inSpan } from '@feed/telemetry';
import type { MongoBudget, VideoModel } from '@feed/storage';
import type { ApiMetrics } from '../metrics';
import { objectIdOf, parseVideoId, readVideoDocument, type CatalogVideo } from './video-document';

export type { CatalogVideo } from './video-document';

/** The fields the feed needs: R1's re-check, the item shape, the author for the own-video skip. */
const PUBLIC_PROJECTION = {
  title: 1, coverUrl: 1, playUrl: 1, durationSec: 1, authorId: 1, newsType: 1, status: 1, deleted: 1, reviewAt: 1,
  vip: 1, coin: 1, isAd: 1, special: 1, likeCount: 1, collectCount: 1, commentCount: 1, shareCount: 1,
  fakeLikeCount: 1, fakeCommentCount: 1, fakeShareCount: 1,
} as const;

/** One item of `vInfos`: display counts as the client shows them (real + fake), never recommend*. */
export type VideoInfo = { vid: string; reviewAt: string | null } & Pick<
  CatalogVideo,
  'title' | 'coverUrl' | 'playUrl' | 'durationSec' | 'authorId' | 'vip' | 'coin' | 'isAd' | 'special' | 'likeCount' | 'collectCount' | 'commentCount' | 'shareCount'
>;

/** The ad endpoint picks from this many most recently approved ads, re-read every AD_POOL_TTL_MS. */
const AD_POOL_SIZE = 200;
const AD_POOL_TTL_MS = 30_000;

/** Without video documents nothing can be served: a clear 503, not a fallback. */
const videoStoreDown = (err: Error): never => {
  throw unavailable(`video store unavailable: ${err.message}`);
};

/** Real + fake within [0, MAX_VALUE]: two finite counters can sum to Infinity (JSON null), a large negative fake to below 0. */
const shown = (real: number, fake: number) => Math.min(Number.MAX_VALUE, Math.max(0, Math.max(0, real) + fake));

/** The item of a document as video-document.ts read it: display counts are real + fake. */
export function toVideoInfo(video: CatalogVideo): VideoInfo {
  return {
    vid: video._id.toHexString(),
    title: video.title,
    coverUrl: video.coverUrl,
    playUrl: video.playUrl,
    durationSec: video.durationSec,
    authorId: video.authorId,
    vip: video.vip,
    coin: video.coin,
    isAd: video.isAd,
    special: video.special,
    likeCount: shown(video.likeCount, video.fakeLikeCount),
    collectCount: Math.max(0, video.collectCount),
    commentCount: shown(video.commentCount, video.fakeCommentCount),
    shareCount: shown(video.shareCount, video.fakeShareCount),
    reviewAt: isoDate(video.reviewAt),
  };
}

/**
 * Heap bytes of a cached entry (document, item, JSON) beside its strings, measured with `--expose-gc`
 * over 20,000 demo videos; each string character costs two (the document's and the JSON's copy).
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

/** Odd documents logged one by one per catalog; the rest are only counted. */
const ISSUES_LOGGED = 100;

export interface CatalogOptions {
  model: VideoModel;
  /** VIDEO_CACHE_MS (0: no cache). */
  ttlMs: number;
  maxEntries?: number;
  /** The cache's share of API_MEMORY_BUDGET_MB. */
  maxBytes?: number;
  /** MONGO_DEADLINE_MS (default 1 s): the bound of the queries requests share (the misses of a turn, the fallback's pool). */
  mongoDeadlineMs?: number;
  /** Cache hits and misses (`feed_video_cache_requests_total`), odd documents (`feed_skipped_videos_total{reason}`, R1a). */
  metrics?: Pick<ApiMetrics, 'videoCache' | 'skipped'>;
  /** True during the start's warm-up (ids of no video): its look-ups are not counted, and their answers not cached, even late. */
  warmingUp?: () => boolean;
}

/** The item shape of each cached document, built once per document rather than per response. */
const infos = new WeakMap<CatalogVideo, VideoInfo>();
/** Each item's JSON, serialised once, and its UTF-8 length: a page is then copied together, not stringified field by field. */
const infoJson = new WeakMap<VideoInfo, { json: string; bytes: number }>();
const itemJson = (info: VideoInfo) => ((json) => ({ json, bytes: Buffer.byteLength(json) }))(JSON.stringify(info));

/** The item of a document, built once while the document is cached. */
export const videoInfo = (video: CatalogVideo): VideoInfo => memoized(infos, video, toVideoInfo);

/** The bytes of `JSON.stringify(page)`, each item's JSON made once and written into one buffer (the hot path: no joined string to flatten and encode). */
export function pageBody({ vInfos, ...fields }: { vInfos: VideoInfo[] }): Buffer {
  const rest = JSON.stringify(fields);
  const tail = rest === '{}' ? ']}' : `],${rest.slice(1)}`;
  const items = vInfos.map((v) => memoized(infoJson, v, itemJson));
  // '{"vInfos":[' and the commas between the items: 11 + n - 1 bytes (11 when there is none).
  const body = Buffer.allocUnsafe(items.reduce((bytes, item) => bytes + item.bytes + 1, 10) + Buffer.byteLength(tail) + (items.length === 0 ? 1 : 0));
  let at = body.write('{"vInfos":[');
  items.forEach(({ json }, i) => {
    if (i > 0) at = body.writeUInt8(0x2c, at);
    at += body.write(json, at);
  });
  body.write(tail, at);
  return body;
}

export class VideoCatalog {
  /** Documents by id (null: no such video) for VIDEO_CACHE_MS, within VIDEO_CACHE_MAX and `maxBytes`; LRU. */
  private readonly cache: LRUCache<string, { video: CatalogVideo | null }> | undefined;
  /** The MongoDB fallback's pool of recent videos, shared by concurrent requests while fresh. */
  private recent?: { limit: number; expiresAt: number; docs: Promise<Array<{ vid: string; authorId: string }>> };
  private adPool?: { ids: string[]; expiresAt: number };
  private issuesLogged = 0;
  /** This loop turn's cache misses, not yet sent. */
  private batch?: { ids: string[]; docs: Promise<Map<string, CatalogVideo>> };
  /** Ids of a query sent and not answered yet. */
  private readonly fetching = new Map<string, Promise<Map<string, CatalogVideo>>>();

  private readonly mongoMs: number;

  constructor(private readonly o: CatalogOptions) {
    const { ttlMs, maxEntries = 100_000, maxBytes = 32 * 1024 * 1024 } = o;
    this.mongoMs = o.mongoDeadlineMs ?? 1000;
    this.cache = ttlMs > 0 && maxEntries > 0 && maxBytes > 0 ? new LRUCache({ max: maxEntries, ttl: ttlMs, maxSize: maxBytes, sizeCalculation: videoEntryBytes }) : undefined;
  }

  /** Estimated heap bytes held by the cache (`feed_cache_bytes{cache="video"}`). */
  cacheBytes(): number {
    return this.cache?.calculatedSize ?? 0;
  }

  /** Videos by id. A loop turn's misses are one MongoDB query, each request waiting within its `budget`; in-flight ids are shared. */
  async load(ids: readonly string[], budget: MongoBudget): Promise<Map<string, CatalogVideo>> {
    const found = new Map<string, CatalogVideo>();
    const misses: string[] = [];
    for (const id of ids) {
      const hit = this.cache?.get(id);
      if (hit) {
        if (hit.video) found.set(id, hit.video);
      } else misses.push(id);
    }
    const hits = ids.length - misses.length;
    const counted = this.cache && !this.o.warmingUp?.();
    if (counted && hits > 0) this.o.metrics?.videoCache.inc({ result: 'hit' }, hits);
    if (counted && misses.length > 0) this.o.metrics?.videoCache.inc({ result: 'miss' }, misses.length);
    if (misses.length === 0) return found;
    const fetched = await budget.run(() => Promise.all(new Set(misses.map((id) => this.fetching.get(id) ?? this.fetch(id)))), 'video lookup').catch(videoStoreDown);
    for (const id of misses) {
      const video = fetched.find((byId) => byId.has(id))?.get(id);
      if (video) found.set(id, video);
    }
    return found;
  }

  /** Adds `id` to this turn's query (sent once the turn's requests have asked), bounded by its own signal. */
  private fetch(id: string): Promise<Map<string, CatalogVideo>> {
    if (!this.batch) {
      const ids: string[] = [];
      const keep = !this.o.warmingUp?.();
      const docs = new Promise((resolve) => setImmediate(resolve)).then(() => {
        this.batch = undefined;
        // An id that is no ObjectId (a legacy set holds what others wrote) names no video.
        const objectIds = ids.flatMap((vid) => parseVideoId(vid) ?? []);
        const query = objectIds.length === 0 ? Promise.resolve([]) : this.o.model.find({ _id: { $in: objectIds } }, null, { signal: AbortSignal.timeout(this.mongoMs) }).select(PUBLIC_PROJECTION).lean<Array<Record<string, unknown>>>();
        return inSpan('video lookup', { 'feed.videos': ids.length }, () => query)
          .then((docs) => {
            const byId = new Map<string, CatalogVideo>();
            for (const doc of docs) {
              const video = this.read(doc);
              if (video) byId.set(video._id.toHexString(), video);
            }
            if (keep) for (const vid of ids) this.cache?.set(vid, { video: byId.get(vid) ?? null });
            return byId;
          });
      });
      // Answered or failed (even before it was sent), its ids are asked again by the next request.
      this.batch = { ids, docs: docs.finally(() => ids.forEach((vid) => this.fetching.delete(vid))) };
    }
    this.batch.ids.push(id);
    this.fetching.set(id, this.batch.docs);
    return this.batch.docs;
  }

  /** A document through the one reader: counted (and the first ones logged with their `_id`) when odd. */
  private read(document: Record<string, unknown>): CatalogVideo | null {
    const { video, issue } = readVideoDocument(document);
    if (issue) {
      this.o.metrics?.skipped.inc({ reason: issue });
      if (this.issuesLogged++ < ISSUES_LOGGED) {
        logger.warn(issue === 'unreadable_id' ? 'video document skipped: no ObjectId _id' : 'video field read as 0', { issue, _id: describeId(document._id) });
      }
    }
    return video;
  }

  /** The items for `ids` that may be served (R1 re-checked), in `ids` order, skipping `exceptAuthorId`'s own. */
  async servable(ids: readonly string[], budget: MongoBudget, exceptAuthorId?: string): Promise<VideoInfo[]> {
    const videos = await this.load(ids, budget);
    return ids.flatMap((id) => {
      const video = videos.get(id);
      return video && isEligible(video) && (exceptAuthorId === undefined || video.authorId !== exceptAuthorId) ? [videoInfo(video)] : [];
    });
  }

  /**
   * The MongoDB fallback: ids of the `limit` newest servable videos, not `exceptAuthorId`'s, by R1's
   * filter on its index with `maxTimeMS`; a slower answer than `budget` still fills the pool.
   */
  async recentServableIds(limit: number, budget: MongoBudget, exceptAuthorId?: string): Promise<string[]> {
    // During a Redis outage every request lands here: one query per cache period, not one each.
    const now = Date.now();
    if (!this.recent || this.recent.expiresAt <= now || this.recent.limit !== limit) {
      // Shared by the requests that come while it runs: bounded by its own signal, not one request's.
      const query = this.o.model
        .find(ELIGIBLE_FILTER, null, { signal: AbortSignal.timeout(this.mongoMs) })
        .sort({ reviewAt: -1 })
        .limit(limit)
        .maxTimeMS(this.mongoMs)
        .select(PUBLIC_PROJECTION)
        .lean<Array<Record<string, unknown>>>()
        .catch(videoStoreDown)
        .then((docs) =>
          docs.flatMap((doc) => {
            const video = this.read(doc);
            if (!video) return [];
            const vid = video._id.toHexString();
            // The page re-reads these documents by id: from the cache, not a second query.
            if (!this.cache?.has(vid)) this.cache?.set(vid, { video });
            return [{ vid, authorId: video.authorId }];
          }),
        );
      const recent = { limit, expiresAt: now + this.o.ttlMs, docs: query };
      this.recent = recent;
      query.catch(() => {
        if (this.recent === recent) this.recent = undefined;
      });
    }
    const { docs } = this.recent;
    const pool = await budget.run(() => docs, 'MongoDB fallback').catch((err: unknown) => {
      throw err instanceof AppError ? err : unavailable(`MongoDB fallback: ${err instanceof Error ? err.message : String(err)}`);
    });
    return pool.filter((v) => exceptAuthorId === undefined || v.authorId !== exceptAuthorId).map((v) => v.vid);
  }

  /** Up to `pageSize` servable ads (R1 re-checked), picked at random from the most recent ones. */
  async randomAds(pageSize: number, budget: MongoBudget): Promise<VideoInfo[]> {
    const now = Date.now();
    if (!this.adPool || this.adPool.expiresAt <= now) {
      const ads = await budget
        .run((signal) => this.o.model.find({ ...ELIGIBLE_FILTER, isAd: true }, null, { signal }).sort({ reviewAt: -1 }).limit(AD_POOL_SIZE).select({ _id: 1 }).lean<Array<{ _id: unknown }>>(), 'ad pool')
        .catch(videoStoreDown);
      // An odd `_id` is counted when the page reads the document; here it is only left out.
      this.adPool = { ids: ads.flatMap((ad) => objectIdOf(ad._id)?.toHexString() ?? []), expiresAt: now + AD_POOL_TTL_MS };
    }
    return this.servable(shuffleInPlace([...this.adPool.ids], Math.random).slice(0, pageSize), budget);
  }

}

/** `derive(key)`, computed once per key while the key lives. */
function memoized<K extends object, V>(cache: WeakMap<K, V>, key: K, derive: (key: K) => V): V {
  let value = cache.get(key);
  if (value === undefined) cache.set(key, (value = derive(key)));
  return value;
}

/** A document's `_id` for a log line, whatever its type. */
function describeId(id: unknown): string {
  try {
    return JSON.stringify(id) ?? String(id);
  } catch {
    return String(id);
  }
}
