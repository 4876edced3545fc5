/**
 * The feed (SPEC R11–R17, V2): which videos a user gets next.
 *
 * Strategies, tried in order, each small and named:
 *  - ring:    the day's ring queue (current version, else the previous one);
 *  - legacy:  random ids from the legacy set (users outside the rollout, or no usable version);
 *  - mongo:   a bounded MongoDB query (Redis failing entirely).
 * Every fallback is logged with its reason and counted.
 */
import { BLOCK_SIZE, ELIGIBLE_FILTER, fnv1a32, shuffleInPlace } from '@feed/domain';
import { logger } from '@feed/logger';
import { runScript, type Redis, type RedisKeys } from '@feed/storage';
import { AppError, unavailable } from '../http/errors';
import type { Identity } from '../http/identity';
import type { ApiMetrics, SkipReason } from '../metrics';
import { withDeadline } from '../with-deadline';
import { CurrentVersionCache } from './current-version';
import { judgeCandidate } from './candidate-verdict';
import type { VideoCatalog, VideoInfo } from './video-catalog';
import type { UserFilter, UserHistory } from '../users/user-history';

export interface FeedPage {
  vInfos: VideoInfo[];
  totalPages: number;
  hasNext: boolean;
  queueVersion: string;
  /** True when a whole circle of the ring held nothing this user has not seen or rejected. */
  allSeen?: boolean;
}

export interface FeedOptions {
  enabled: boolean;
  percent: number;
  currentCacheMs: number;
  /** Upper bound for the ring read (or the legacy read) before falling back. */
  redisTimeoutMs?: number;
}

/** Most recent approved videos the MongoDB fallback samples from. */
const MONGO_FALLBACK_POOL = 200;

class VersionGoneError extends Error {}

/** FNV-1a of the identity key: a user's rollout bucket never changes. */
export function rolloutBucket(key: string): number {
  return fnv1a32(key) % 100;
}

interface RingSlice {
  length: number;
  ids: string[];
}

export class FeedService {
  readonly versions: CurrentVersionCache;
  private readonly redisTimeoutMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly catalog: VideoCatalog,
    private readonly history: UserHistory,
    private readonly metrics: ApiMetrics,
    private readonly options: FeedOptions,
  ) {
    this.versions = new CurrentVersionCache(redis, keys, options.currentCacheMs);
    this.redisTimeoutMs = options.redisTimeoutMs ?? 1000;
  }

  inRollout(identity: Identity): boolean {
    return this.options.enabled && rolloutBucket(identity.key) < this.options.percent;
  }

  /** The next page for this user, from the best strategy that works. */
  async nextPage(identity: Identity, pageSize: number, requestId?: string): Promise<FeedPage> {
    let page: FeedPage;
    let strategy: string;
    try {
      if (!this.inRollout(identity)) {
        strategy = 'legacy';
        page = await this.legacyPage(identity, pageSize);
      } else {
        try {
          strategy = 'ring';
          page = await this.ringPage(identity, pageSize, requestId);
        } catch (err) {
          if (err instanceof AppError) throw err;
          this.degrade('legacy-set', err, requestId);
          strategy = 'legacy';
          page = await this.legacyPage(identity, pageSize);
        }
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      this.degrade('mongo-fallback', err, requestId);
      strategy = 'mongo';
      page = await this.mongoPage(identity, pageSize);
    }
    this.metrics.pages.inc({ strategy });
    if (page.vInfos.length === 0) this.metrics.emptyPages.inc({ strategy });
    return page;
  }

  private degrade(kind: 'previous-version' | 'legacy-set' | 'mongo-fallback', reason: unknown, requestId?: string): void {
    this.metrics.degradations.inc({ kind });
    if (reason instanceof Error && !(reason instanceof VersionGoneError)) this.metrics.redisFailures.inc({ operation: kind });
    logger.warn('feed degraded', { requestId, kind, reason: reason instanceof Error ? reason.message : String(reason) });
  }

  /** One Lua call: claims `count` positions of the ring for this user (R11). */
  private async claim(version: string, userKey: string, count: number): Promise<RingSlice> {
    const reply = await runScript<Array<number | string>>(this.redis, 'ring-read', [this.keys.queue(version), this.keys.offset(version)], [userKey, String(count)]);
    const length = Number(reply[0]);
    if (length === 0) throw new VersionGoneError(`queue of version ${version} is gone`);
    // reply[1] is the old offset: the ids already start there.
    return { length, ids: reply.slice(2) as string[] };
  }

  /** The version to read: current, or the previous one when current's keys are gone. */
  private async ringPage(identity: Identity, pageSize: number, requestId?: string): Promise<FeedPage> {
    // node-redis v5 has no per-command timeout. A disconnected Redis fails at once (the API's
    // client has no offline queue); a connected but hung one is caught here, when the cached
    // pointers expire. The ring claim itself is never abandoned midway: its positions are served.
    const pointers = this.versions.peek() ?? (await withDeadline(this.versions.get(), this.redisTimeoutMs, 'current version'));
    if (!pointers.current) throw new VersionGoneError('no current version');
    this.metrics.currentVersion.set(Number(pointers.current) || 0);
    const filterPromise = this.history.load(identity.key);
    // Settle it now so an early failure of the ring read does not leave it unhandled.
    filterPromise.catch(() => undefined);
    try {
      return await this.scanRing(pointers.current, identity, pageSize, filterPromise);
    } catch (err) {
      if (!(err instanceof VersionGoneError) || !pointers.previous || pointers.previous === pointers.current) throw err;
      this.versions.invalidate();
      this.degrade('previous-version', err, requestId);
      return this.scanRing(pointers.previous, identity, pageSize, filterPromise);
    }
  }

  /**
   * Claims positions until the page is full or one whole circle was scanned. Every claimed
   * position is either served or skipped (taken down, seen, not interested, own video, or
   * already in this page), so the offset moves past exactly what this request looked at.
   */
  private async scanRing(version: string, identity: Identity, pageSize: number, filterPromise: Promise<UserFilter>): Promise<FeedPage> {
    const served: VideoInfo[] = [];
    const inPage = new Set<string>();
    const skips = new Map<SkipReason, number>();
    const skip = (reason: SkipReason) => skips.set(reason, (skips.get(reason) ?? 0) + 1);
    let length = Number.POSITIVE_INFINITY;
    let scanned = 0;
    while (served.length < pageSize && scanned < length) {
      const slice = await this.claim(version, identity.key, Math.min(pageSize - served.length, length - scanned));
      length = slice.length;
      scanned += slice.ids.length;
      const [videos, filter] = await Promise.all([this.catalog.load(slice.ids), filterPromise]);
      for (const id of slice.ids) {
        const video = videos.get(id);
        const verdict = judgeCandidate(id, video, filter, identity, inPage);
        if (verdict !== 'serve') skip(verdict);
        else {
          inPage.add(id);
          served.push(this.catalog.infoOf(video!));
        }
      }
    }
    for (const [reason, count] of skips) this.metrics.skipped.inc({ reason }, count);
    return {
      vInfos: served,
      totalPages: Math.ceil(length / BLOCK_SIZE),
      hasNext: length > 0,
      queueVersion: version,
      ...(served.length === 0 ? { allSeen: true } : {}),
    };
  }

  /** The old behaviour: random ids from the legacy set (SRANDMEMBER), re-checked against R1. */
  private async legacyPage(identity: Identity, pageSize: number): Promise<FeedPage> {
    const [ids, size] = await withDeadline(
      Promise.all([this.redis.sRandMemberCount(this.keys.legacyIds, pageSize), this.redis.sCard(this.keys.legacyIds)]),
      this.redisTimeoutMs,
      'legacy set',
    );
    if (ids.length === 0) throw new Error('legacy set is empty');
    const vInfos = await this.catalog.servable(ids, identity.userId);
    return { vInfos, totalPages: Math.ceil(size / BLOCK_SIZE), hasNext: size > 0, queueVersion: 'legacy' };
  }

  /** Last resort without Redis: a random page of the most recent approved short videos. */
  private async mongoPage(identity: Identity, pageSize: number): Promise<FeedPage> {
    const recent = await this.catalog.model
      .find(ELIGIBLE_FILTER)
      .sort({ reviewAt: -1 })
      .limit(MONGO_FALLBACK_POOL)
      .select({ _id: 1, authorId: 1 })
      .lean()
      .catch((err: Error) => {
        throw unavailable(`feed unavailable: Redis and MongoDB both failing (${err.message})`);
      });
    const pool = recent.filter((v) => v.authorId !== identity.userId).map((v) => v._id.toHexString());
    const vInfos = await this.catalog.servable(shuffleInPlace(pool, Math.random).slice(0, pageSize));
    return { vInfos, totalPages: Math.ceil(recent.length / BLOCK_SIZE), hasNext: recent.length > 0, queueVersion: 'fallback' };
  }
}
