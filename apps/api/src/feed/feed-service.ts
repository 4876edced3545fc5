/**
 * The feed (SPEC R11–R17, V2): a page comes from the first strategy that works: `ring` (current's
 * ring queue), `previous-version` (when current's keys are gone), `legacy-set` (random legacy ids;
 * the only one for users outside the rollout), `mongo-fallback` (recent videos, without Redis).
 * Any after the first is a degradation, logged and counted in `feed_degradations_total{kind}`.
 * Calls read the request's budget; an incomplete ring page gives back its claims (R11, R17).
 * `peekPage` (HEAD) neither claims nor counts. Details: docs/design.md, "Degradation".
 */
import { BLOCK_SIZE, shuffleInPlace } from '@feed/domain';
import { logger } from '@feed/logger';
import { DeadlineSpentError, RedisCallError, type RequestBudget, type Variant, type VersionStore } from '@feed/storage';
import { AppError, unavailable } from '@feed/http';
import { annotateRequestSpan } from '@feed/telemetry';
import type { Identity } from '../http/identity';
import type { SkipReason, StrategyName } from '../labels';
import type { ApiMetrics } from '../metrics';
import { QueueGoneError, RingClaims } from './ring-claims';
import { scanRing, type RingReader } from './ring-scan';
import { servesRing, type FeedReadState, type FeedReadStateCache } from './feed-read-state';
import type { VariantReadout } from './variant-readout';
import { videoInfo, type VideoCatalog, type VideoInfo } from './video-catalog';
import type { UserFilter, UserHistory } from '@feed/storage';

export interface FeedPage {
  vInfos: VideoInfo[];
  totalPages: number;
  hasNext: boolean;
  queueVersion: string;
  /** True when a whole circle of the ring held nothing this user has not seen or rejected. */
  allSeen?: boolean;
}

/** The collaborators the composition root (app.ts) builds and hands in. */
export interface FeedDeps {
  /** The versions' keys: pointers, rings, claims, the legacy set. */
  versions: VersionStore;
  catalog: VideoCatalog;
  history: UserHistory;
  metrics: ApiMetrics;
  readState: FeedReadStateCache;
  /** Where the ids at claimed positions come from (the instance's queue copies, or Redis). */
  reader: RingReader;
  /** Pages and engagement per variant (D7). */
  readout: VariantReadout;
}

const RING_CHAIN = ['ring', 'previous-version', 'legacy-set', 'mongo-fallback'] as const;
const LEGACY_CHAIN = ['legacy-set', 'mongo-fallback'] as const;
/** Most recent approved videos the MongoDB fallback samples from. */
const MONGO_FALLBACK_POOL = 200;
const NO_FILTER: UserFilter = { viewed: () => false, notInterested: () => false };

/** The strategy does not apply (no such version, an empty set): the next one is tried. */
class NotApplicable extends Error {}

interface PageRequest {
  identity: Identity;
  pageSize: number;
  readState: FeedReadState;
  budget: RequestBudget;
  /** HEAD: read the positions a claim would take, claim nothing, count nothing. */
  peek: boolean;
  requestId?: string;
}

type Strategy = (request: PageRequest) => Promise<FeedPage>;

export class FeedService {
  private readonly strategies: Record<StrategyName, Strategy> = {
    ring: (r) => this.ringPage(r, r.readState.current),
    'previous-version': (r) => this.ringPage(r, r.readState.previous !== r.readState.current ? r.readState.previous : null),
    'legacy-set': (r) => this.legacyPage(r),
    'mongo-fallback': (r) => this.mongoPage(r),
  };

  constructor(private readonly d: FeedDeps) {}

  /** What `nextPage` would answer now (HEAD, SPEC C): the same chain and status, nothing claimed or counted. */
  async peekPage(identity: Identity, pageSize: number, budget: RequestBudget, requestId?: string): Promise<FeedPage> {
    const { request, chain } = await this.pageRequest({ identity, pageSize, budget, peek: true, requestId });
    return (await this.firstWorking(chain, request)).page;
  }

  /** The next page for this user, from the first strategy of the chain that works, within the request's `budget`. */
  async nextPage(identity: Identity, pageSize: number, budget: RequestBudget, requestId?: string): Promise<FeedPage> {
    const { request, chain } = await this.pageRequest({ identity, pageSize, budget, peek: false, requestId });
    const { metrics, readout } = this.d;
    const variant: Variant = chain[0] === 'ring' ? 'ring' : 'legacy';
    readout.countHealth(variant, 'request');
    try {
      const { page, name, index, failures } = await this.firstWorking(chain, request);
      metrics.pages.inc({ strategy: name });
      readout.count(variant, 'page');
      annotateRequestSpan({ 'feed.strategy': name, 'feed.queue_version': page.queueVersion, 'feed.videos': page.vInfos.length });
      if (page.vInfos.length === 0) {
        metrics.emptyPages.inc({ strategy: name });
        readout.countHealth(variant, 'empty-page');
      }
      if (index > 0) {
        metrics.degradations.inc({ kind: name });
        readout.countHealth(variant, 'degraded');
        logger.warn('feed degraded', { requestId, kind: name, reasons: failures });
      }
      return page;
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) readout.countHealth(variant, 'server-error');
      throw err;
    }
  }

  private async pageRequest(request: Omit<PageRequest, 'readState'>): Promise<{ request: PageRequest; chain: readonly StrategyName[] }> {
    // The cached state without a wait (nearly every page); otherwise read within the deadline.
    const readState = this.d.readState.peek() ?? (await this.d.readState.read(request.budget.redis, request.requestId));
    // The strategies tried for this user, in order.
    return { request: { ...request, readState }, chain: servesRing(readState, request.identity) ? RING_CHAIN : LEGACY_CHAIN };
  }

  /** The page of the first strategy of `chain` that works, with the reasons of those that did not. */
  private async firstWorking(chain: readonly StrategyName[], request: PageRequest): Promise<{ page: FeedPage; name: StrategyName; index: number; failures: string[] }> {
    const failures: string[] = [];
    for (const [index, name] of chain.entries()) {
      try {
        return { page: await this.strategies[name](request), name, index, failures };
      } catch (err) {
        // Client errors and "nothing can be served" (503) are answers, not reasons to fall back.
        if (err instanceof AppError) throw err;
        if (!request.peek && err instanceof RedisCallError && !(err instanceof DeadlineSpentError)) this.d.metrics.redisFailures.inc({ operation: name });
        failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    // Every store failed (not one document: the reader skips those): unavailable, not a bug.
    throw unavailable(`no feed strategy worked: ${failures.join('; ')}`);
  }

  /**
   * Claims until the page is full or a circle was scanned; every claimed position is served or
   * skipped, so the offset moves past exactly what was looked at. Past the deadline no new claims.
   */
  private async ringPage(request: PageRequest, version: string | null): Promise<FeedPage> {
    if (!version) throw new NotApplicable('no such version');
    const { versions, catalog, history, metrics, reader, readState } = this.d;
    const ring = request.readState.rings.get(version);
    if (!ring) {
      readState.invalidate();
      throw new NotApplicable(`queue of version ${version} is gone`);
    }
    const { identity, pageSize, budget } = request;
    const deadline = budget.redis;
    const filter = deadline.run(() => history.load(identity.key), 'user filter').catch((err: unknown) => {
      metrics.redisFailures.inc({ operation: 'user-filter' });
      logger.warn('user filter unreadable, serving unfiltered', { requestId: request.requestId, err: err instanceof Error ? err.message : String(err) });
      return NO_FILTER;
    });
    const claims = request.peek ? undefined : new RingClaims({ versions, reader, metrics, ring, userKey: identity.key, deadline });
    const positions = claims ?? reader.peekFrom(ring, await deadline.run(() => versions.offset(ring, identity.key), 'offset read'), deadline);
    // A page that cannot be completed serves nothing and gives its claims back first, so a retry
    // starts where the last served page ended.
    const candidates = await scanRing({ ring, identity, pageSize, catalog, filter, budget: budget.mongo, positions }).catch(async (err: unknown) => {
      if (err instanceof QueueGoneError) readState.invalidate();
      await claims?.giveBackAll();
      throw err;
    });
    const served: VideoInfo[] = [];
    const skips = new Map<SkipReason, number>();
    for (const { verdict, video } of candidates) {
      if (verdict === 'serve') served.push(videoInfo(video!));
      else skips.set(verdict, (skips.get(verdict) ?? 0) + 1);
    }
    if (!request.peek) for (const [reason, count] of skips) metrics.skipped.inc({ reason }, count);
    metrics.currentVersion.set(Number(request.readState.current) || 0);
    return { vInfos: served, totalPages: Math.ceil(ring.length / BLOCK_SIZE), hasNext: ring.length > 0, queueVersion: version, ...(served.length === 0 ? { allSeen: true } : {}) };
  }

  /** The old behaviour: random ids from the legacy set (SRANDMEMBER), re-checked against R1. */
  private async legacyPage({ identity, pageSize, budget }: PageRequest): Promise<FeedPage> {
    const { ids, size } = await budget.redis.run(() => this.d.versions.sampleLegacy(pageSize), 'legacy set');
    if (ids.length === 0) throw new NotApplicable('legacy set is empty');
    const vInfos = await this.d.catalog.servable(ids, budget.mongo, identity.userId);
    return { vInfos, totalPages: Math.ceil(size / BLOCK_SIZE), hasNext: size > 0, queueVersion: 'legacy' };
  }

  /** Last resort without Redis: a random page of the most recent approved short videos. */
  private async mongoPage({ identity, pageSize, budget }: PageRequest): Promise<FeedPage> {
    const recent = await this.d.catalog.recentServableIds(MONGO_FALLBACK_POOL, budget.mongo, identity.userId);
    const vInfos = await this.d.catalog.servable(shuffleInPlace(recent, Math.random).slice(0, pageSize), budget.mongo);
    return { vInfos, totalPages: Math.ceil(recent.length / BLOCK_SIZE), hasNext: recent.length > 0, queueVersion: 'fallback' };
  }
}
