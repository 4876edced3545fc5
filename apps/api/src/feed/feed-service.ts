/**
 * The feed (SPEC R11–R17, V2): which videos a user gets next.
 *
 * One ordered chain of named strategies; a page comes from the first that works:
 *  - `ring`:             the day's ring queue (current version);
 *  - `previous-version`: the ring of the version before it, when current's keys are gone;
 *  - `legacy-set`:       random ids from the legacy set (SRANDMEMBER); the only Redis strategy
 *                        for users outside the rollout;
 *  - `mongo-fallback`:   a random page of recent approved videos from MongoDB, without Redis.
 * A page served by any strategy after the chain's first is a degradation: logged with the
 * reasons of the strategies that failed, and counted in `feed_degradations_total{kind}`.
 * Every Redis call shares one per-request deadline, so a stalled Redis costs at most that; every
 * MongoDB call shares another (MONGO_DEADLINE_MS): a frozen MongoDB is a 503 within it, and a ring
 * page that could not be completed gives back the positions it claimed (R11, R17).
 * `peekPage` (HEAD) runs the same chain without claiming or counting anything.
 */
import { BLOCK_SIZE, fnv1a32, shuffleInPlace } from '@feed/domain';
import { logger } from '@feed/logger';
import { claimPositions, Deadline, DeadlineSpentError, readOffset, redisClockMs, RedisCallError, unclaimPositions, VersionStore, withDeadline, type Claim, type MongoBudget, type Redis, type RedisKeys, type RingVersion, type Variant } from '@feed/storage';
import { AppError, unavailable } from '@feed/http';
import { annotateRequestSpan, inSpan } from '@feed/telemetry';
import type { Identity } from '../http/identity';
import type { SkipReason, StrategyName } from '../labels';
import type { ApiMetrics } from '../metrics';
import { RingReader, scanRing } from './ring-scan';
import type { QueueCopies } from './queue-copies';
import { ClockSkewProbe } from './clock-skew';
import { FeedReadStateCache, type FeedReadState } from './feed-read-state';
import { VariantReadout, type Arm } from './variant-readout';
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
  /** The environment's rollout (R16); on-call's override in Redis takes precedence. */
  enabled: boolean;
  percent: number;
  currentCacheMs: number;
  /** The Redis budget of one page request (R17). */
  redisDeadlineMs: number;
  /** The instance's copies of published queues (R22); absent: positions are read from Redis. */
  queueCopies?: QueueCopies;
}

/** Most recent approved videos the MongoDB fallback samples from. */
const MONGO_FALLBACK_POOL = 200;
const NO_FILTER: UserFilter = { viewed: () => false, notInterested: () => false };

/** The strategy does not apply (no such version, an empty set): the next one is tried. */
class NotApplicable extends Error {}

/** FNV-1a of the identity key: a user's rollout bucket never changes. */
export function rolloutBucket(key: string): number {
  return fnv1a32(key) % 100;
}

interface PageRequest {
  identity: Identity;
  pageSize: number;
  readState: FeedReadState;
  deadline: Deadline;
  mongo: MongoBudget;
  /** HEAD: read the positions a claim would take, claim nothing, count nothing. */
  peek: boolean;
  requestId?: string;
}

type Strategy = (request: PageRequest) => Promise<FeedPage>;

export class FeedService {
  readonly readState: FeedReadStateCache;
  /** Pages and engagement per variant (D7); the interaction routes count into it too. */
  readonly readout: VariantReadout;
  /** Where the ids at claimed positions come from (shared with explain). */
  readonly reader: RingReader;
  /** This host's clock against Redis's (feed_clock_skew_seconds), measured at read-state refreshes. */
  readonly clockSkew: ClockSkewProbe;
  private readonly versions: VersionStore;
  private readonly strategies: Record<StrategyName, Strategy> = {
    ring: (r) => this.ringPage(r, r.readState.current),
    'previous-version': (r) => this.ringPage(r, r.readState.previous !== r.readState.current ? r.readState.previous : null),
    'legacy-set': (r) => this.legacyPage(r),
    'mongo-fallback': (r) => this.mongoPage(r),
  };

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly catalog: VideoCatalog,
    private readonly history: UserHistory,
    private readonly metrics: ApiMetrics,
    private readonly options: FeedOptions,
  ) {
    this.clockSkew = new ClockSkewProbe(() => redisClockMs(redis, keys), metrics.clockSkew);
    this.versions = new VersionStore(redis, keys);
    const showRollout = ({ rollout }: FeedReadState) => {
      metrics.rolloutEnabled.set(rollout.enabled ? 1 : 0);
      metrics.rolloutPercent.set(rollout.percent);
    };
    this.readState = new FeedReadStateCache(redis, keys, options.currentCacheMs, { enabled: options.enabled, percent: options.percent }, (readState) => {
      showRollout(readState);
      this.clockSkew.maybeMeasure();
      // Each version or build seen is copied ahead of its first reads, at a jittered moment (R22).
      for (const ring of readState.rings.values()) if (ring) options.queueCopies?.preload(ring);
    });
    // Until Redis is first read, the environment's values are in force.
    showRollout(this.readState.lastKnown());
    this.readout = new VariantReadout(redis, keys, metrics, (identity) => this.variantOf(identity), (identity) => history.guestFirstSeen(identity.key));
    this.reader = new RingReader(redis, keys, options.queueCopies);
  }

  /** The variant that serves this user under the rollout in force (D7), and its percent (the split asked for): read as a page request reads it. */
  async variantOf(identity: Identity): Promise<Arm> {
    const readState = await this.currentReadState(new Deadline(this.options.redisDeadlineMs));
    const { enabled, percent } = readState.rollout;
    return { variant: this.chainFor(identity, readState)[0] === 'ring' ? 'ring' : 'legacy', percent: enabled ? percent : 0 };
  }

  /** The strategies tried for this user, in order. */
  chainFor(identity: Identity, readState: FeedReadState): StrategyName[] {
    const { enabled, percent } = readState.rollout;
    const inRollout = enabled && rolloutBucket(identity.key) < percent;
    return inRollout ? ['ring', 'previous-version', 'legacy-set', 'mongo-fallback'] : ['legacy-set', 'mongo-fallback'];
  }

  /** What `nextPage` would answer now (HEAD, SPEC C): the same chain and status, nothing claimed or counted. */
  async peekPage(identity: Identity, pageSize: number, requestId?: string): Promise<FeedPage> {
    const { request, chain } = await this.pageRequest(identity, pageSize, true, requestId);
    return (await this.firstWorking(chain, request)).page;
  }

  /** The next page for this user, from the first strategy of the chain that works. */
  async nextPage(identity: Identity, pageSize: number, requestId?: string): Promise<FeedPage> {
    const { request, chain } = await this.pageRequest(identity, pageSize, false, requestId);
    const variant: Variant = chain[0] === 'ring' ? 'ring' : 'legacy';
    this.readout.countHealth(variant, 'request');
    try {
      const { page, name, index, failures } = await this.firstWorking(chain, request);
      this.metrics.pages.inc({ strategy: name });
      this.readout.count(variant, 'page');
      annotateRequestSpan({ 'feed.strategy': name, 'feed.queue_version': page.queueVersion, 'feed.videos': page.vInfos.length });
      if (page.vInfos.length === 0) {
        this.metrics.emptyPages.inc({ strategy: name });
        this.readout.countHealth(variant, 'empty-page');
      }
      if (index > 0) {
        this.metrics.degradations.inc({ kind: name });
        this.readout.countHealth(variant, 'degraded');
        logger.warn('feed degraded', { requestId, kind: name, reasons: failures });
      }
      return page;
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) this.readout.countHealth(variant, 'server-error');
      throw err;
    }
  }

  private async pageRequest(identity: Identity, pageSize: number, peek: boolean, requestId?: string): Promise<{ request: PageRequest; chain: StrategyName[] }> {
    const deadline = new Deadline(this.options.redisDeadlineMs);
    const readState = await this.currentReadState(deadline, requestId);
    return { request: { identity, pageSize, readState, deadline, mongo: this.catalog.budget(), peek, requestId }, chain: this.chainFor(identity, readState) };
  }

  /** The page of the first strategy of `chain` that works, with the reasons of those that did not. */
  private async firstWorking(chain: StrategyName[], request: PageRequest): Promise<{ page: FeedPage; name: StrategyName; index: number; failures: string[] }> {
    const failures: string[] = [];
    for (const [index, name] of chain.entries()) {
      try {
        return { page: await this.strategies[name](request), name, index, failures };
      } catch (err) {
        // Client errors and "nothing can be served" (503) are answers, not reasons to fall back.
        if (err instanceof AppError) throw err;
        if (!request.peek && err instanceof RedisCallError && !(err instanceof DeadlineSpentError)) this.metrics.redisFailures.inc({ operation: name });
        failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    // Every store failed (not one document: the reader skips those): unavailable, not a bug.
    throw unavailable(`no feed strategy worked: ${failures.join('; ')}`);
  }

  /** A fresh read state, or the last known one when Redis does not answer within the deadline. */
  private async currentReadState(deadline: Deadline, requestId?: string): Promise<FeedReadState> {
    const cached = this.readState.peek();
    if (cached) return cached;
    try {
      return await deadline.run(() => this.readState.get(), 'feed read state');
    } catch (err) {
      // 'settings': the label's name from before the rename (a dashboard and alert contract).
      this.metrics.redisFailures.inc({ operation: 'settings' });
      logger.warn('feed read state unreadable, using the last known', { requestId, err: err instanceof Error ? err.message : String(err) });
      return this.readState.lastKnown();
    }
  }

  /**
   * One Lua call on the user's offset bucket: claims `count` positions of the ring (R11).
   * Positions are consumed only when served, and no clock but the API's own timer decides it: a
   * claim answered after this request gave up (a stalled Redis runs it late, a busy API reads it
   * late) is given back exactly when its answer arrives (ring-unclaim.lua), whatever claims of
   * the same user ran since.
   */
  private async claim(ring: RingVersion, request: PageRequest, count: number): Promise<Claim> {
    const userKey = request.identity.key;
    // Sent only while the request's budget lasts: a claim is never made just to be given back.
    let claiming: Promise<Claim> | undefined;
    try {
      return await request.deadline.run(
        () => inSpan('ring claim', { 'feed.version': ring.version, 'feed.count': count }, () => (claiming = claimPositions(this.redis, this.keys, ring, userKey, count))),
        'ring claim',
      );
    } catch (err) {
      if (claiming && err instanceof RedisCallError) void this.giveBackWhenAnswered(claiming, ring, userKey);
      throw err;
    }
  }

  /** A claim this request stopped waiting for: when it turns out to have run, give it back. */
  private async giveBackWhenAnswered(claiming: Promise<Claim>, ring: RingVersion, userKey: string): Promise<void> {
    let claim: Claim;
    try {
      claim = await claiming;
    } catch {
      // Redis is gone: the claim most likely never ran; nothing to give back.
      return;
    }
    if (claim.count === 0) return;
    // Counted apart from Redis failures: the claim ran, its answer came after the request's deadline.
    this.metrics.lateClaims.inc();
    await this.giveBack(ring, userKey, [claim], 'unbounded');
  }

  /**
   * Claims positions of `version`'s ring until the page is full or one whole circle was scanned
   * (ring-scan.ts). Every claimed position is either served or skipped, so the offset moves past
   * exactly what this request looked at. A claim that happened is served: past the deadline only
   * further claims are given up.
   */
  private async ringPage(request: PageRequest, version: string | null): Promise<FeedPage> {
    if (!version) throw new NotApplicable('no such version');
    const ring = request.readState.rings.get(version);
    if (!ring) {
      this.readState.invalidate();
      throw new NotApplicable(`queue of version ${version} is gone`);
    }
    const { identity, pageSize } = request;
    const filter = request.deadline.run(() => this.history.load(identity.key), 'user filter').catch((err: unknown) => {
      this.metrics.redisFailures.inc({ operation: 'user-filter' });
      logger.warn('user filter unreadable, serving unfiltered', { requestId: request.requestId, err: err instanceof Error ? err.message : String(err) });
      return NO_FILTER;
    });
    const claims: Claim[] = [];
    let peekOffset: Promise<number> | undefined;
    const scan = scanRing({
      ring,
      identity,
      pageSize,
      catalog: this.catalog,
      filter,
      budget: request.mongo,
      take: async (count, scanned) => {
        if (request.peek) {
          peekOffset ??= request.deadline.run(() => readOffset(this.redis, this.keys, ring, identity.key), 'offset read');
          const offset = await peekOffset;
          return request.deadline.run(() => this.reader.peekFrom(ring, offset)(count, scanned), 'queue read');
        }
        try {
          const claim = await this.claim(ring, request, count);
          const ids = await request.deadline.run(() => this.reader.idsAt(ring, claim.offset, claim.count), 'queue read').catch((err: unknown) => {
            // Claimed but not readable (Redis failed between the two calls): not served, so given back.
            void this.giveBack(ring, request.identity.key, [claim], 'unbounded');
            throw err;
          });
          claims.push(claim);
          if (ids.length < claim.count) {
            this.readState.invalidate();
            throw new NotApplicable(`queue of version ${version} is gone`);
          }
          return { start: claim.offset, ids };
        } catch (err) {
          // Positions already claimed are this user's: serve them rather than drop them.
          if (scanned > 0 && err instanceof RedisCallError) return null;
          throw err;
        }
      },
    });
    // A page that cannot be completed (MongoDB frozen, the queue gone) serves nothing: its claims are
    // given back before the answer, so a retry starts where the user's last served page ended.
    const candidates = await scan.catch(async (err: unknown) => {
      await this.giveBack(ring, identity.key, claims.splice(0).reverse());
      throw err;
    });
    const served: VideoInfo[] = [];
    const skips = new Map<SkipReason, number>();
    for (const { verdict, video } of candidates) {
      if (verdict === 'serve') served.push(this.catalog.infoOf(video!));
      else skips.set(verdict, (skips.get(verdict) ?? 0) + 1);
    }
    if (!request.peek) for (const [reason, count] of skips) this.metrics.skipped.inc({ reason }, count);
    this.metrics.currentVersion.set(Number(request.readState.current) || 0);
    return {
      vInfos: served,
      totalPages: Math.ceil(ring.length / BLOCK_SIZE),
      hasNext: ring.length > 0,
      queueVersion: version,
      ...(served.length === 0 ? { allSeen: true } : {}),
    };
  }

  /**
   * Claims not served, latest first; what could not be given back is counted as lost. Before a
   * page's answer within a Redis deadline of their own (the request's may be spent); `unbounded`
   * where no request waits (a claim answered late, one given back in the background).
   */
  private async giveBack(ring: RingVersion, userKey: string, claims: Claim[], wait: 'bounded' | 'unbounded' = 'bounded'): Promise<void> {
    const given = Promise.all(claims.map((claim) => unclaimPositions(this.redis, this.keys, ring, userKey, claim)));
    const unserved = await (wait === 'bounded' ? withDeadline(given, this.options.redisDeadlineMs, 'give-back') : given).catch(() => claims.map((claim) => claim.count));
    for (const lost of unserved) this.metrics.claimsGivenBack.inc({ result: lost === 0 ? 'given-back' : 'lost' });
  }

  /** The old behaviour: random ids from the legacy set (SRANDMEMBER), re-checked against R1. */
  private async legacyPage({ identity, pageSize, deadline, mongo }: PageRequest): Promise<FeedPage> {
    const { ids, size } = await deadline.run(() => this.versions.sampleLegacy(pageSize), 'legacy set');
    if (ids.length === 0) throw new NotApplicable('legacy set is empty');
    const vInfos = await this.catalog.servable(ids, identity.userId, mongo);
    return { vInfos, totalPages: Math.ceil(size / BLOCK_SIZE), hasNext: size > 0, queueVersion: 'legacy' };
  }

  /** Last resort without Redis: a random page of the most recent approved short videos. */
  private async mongoPage({ identity, pageSize, mongo }: PageRequest): Promise<FeedPage> {
    const recent = await this.catalog.recentServableIds(MONGO_FALLBACK_POOL, identity.userId, mongo);
    const vInfos = await this.catalog.servable(shuffleInPlace(recent, Math.random).slice(0, pageSize), undefined, mongo);
    return { vInfos, totalPages: Math.ceil(recent.length / BLOCK_SIZE), hasNext: recent.length > 0, queueVersion: 'fallback' };
  }
}
