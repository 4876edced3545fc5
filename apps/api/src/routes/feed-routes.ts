/** The H5 client's feed endpoints (SPEC R12–R15, V1, V3). */
import { Router, type Request, type RequestHandler } from 'express';
import Joi from 'joi';
import { logger } from '@feed/logger';
import { notFound, requestIdOf, ROUTING, unavailable } from '@feed/http';
import { withDeadline, type WatchCounter } from '@feed/storage';
import { identify } from '../http/identity';
import { objectId, validateBody, validateQuery, vidBody } from '../http/validate';
import type { FeedPage, FeedService } from '../feed/feed-service';
import type { VideoCatalog } from '../feed/video-catalog';
import type { UserHistory } from '../users/user-history';

/** Largest page a client may ask for: more than a few swipes ahead is wasted work. */
export const MAX_PAGE_SIZE = 50;

// Unknown query parameters (cache busters, tracking) are ignored, as the old service did.
export const pageQuery = Joi.object<{ pageNumber: number; pageSize: number }>({
  pageNumber: Joi.number().integer().min(1).max(1_000_000).default(1).description('Accepted for old clients; never moves the offset (R12)'),
  pageSize: Joi.number().integer().min(1).max(MAX_PAGE_SIZE).default(20).description('Videos in the page'),
}).unknown(true);
export const countQuery = Joi.object<{ vid?: string }>({ vid: objectId.description('With it, the watch of this video is registered (once per user, video and day)') }).unknown(true);
export const adQuery = Joi.object<{ pageSize: number }>({ pageSize: Joi.number().integer().min(1).max(10).default(3).description('Ad videos wanted') }).unknown(true);

export interface FeedRouteDeps {
  feed: FeedService;
  catalog: VideoCatalog;
  history: UserHistory;
  watches: WatchCounter;
  jwtSecret: string;
  /** Deadline of each Redis call of these routes (R17): a stalled or lost Redis is a prompt 503. */
  redisDeadlineMs: number;
  /** Counts a failed Redis operation in `feed_redis_failures_total{operation}` (D5). */
  onRedisFailure(operation: RedisOperation): void;
}

/** The Redis operations of these routes, as `feed_redis_failures_total` labels them. */
type RedisOperation = 'watch-count' | 'view-history' | 'not-interested';

const DESCRIBED: Record<RedisOperation, string> = { 'watch-count': 'watch count', 'view-history': 'view history', 'not-interested': 'not-interested marks' };

/** The same JSON as `res.json(page)`, with each item's JSON reused from the catalog (the hot path). */
function serializePage({ vInfos, ...fields }: FeedPage, catalog: VideoCatalog): string {
  const rest = JSON.stringify(fields);
  return `{"vInfos":[${vInfos.map((v) => catalog.jsonOf(v)).join(',')}]${rest === '{}' ? '' : `,${rest.slice(1, -1)}`}}`;
}

export function feedRoutes({ feed, catalog, history, watches, jwtSecret, redisDeadlineMs, onRedisFailure }: FeedRouteDeps): Router {
  const router = Router(ROUTING);

  /** Views, marks and watch counts live only in Redis: without it they are unavailable (counted), not a 500. */
  const inRedis = <T>(promise: Promise<T>, operation: RedisOperation): Promise<T> =>
    withDeadline(promise, redisDeadlineMs, DESCRIBED[operation]).catch((err: unknown) => {
      onRedisFailure(operation);
      throw unavailable(`${DESCRIBED[operation]} unavailable: ${err instanceof Error ? err.message : String(err)}`);
    });

  /** 404 unless the id names a video that exists; 400 for a malformed id is the schema's job. */
  const existingVideo = async (vid: string) => {
    const video = await catalog.get(vid);
    if (!video) throw notFound(`video ${vid} does not exist`);
    return video;
  };

  /** The caller and the existing video named by the body's `vid`. */
  const callerAndVideo = async (req: Request) => {
    const identity = identify(req, jwtSecret);
    const { vid } = validateBody(vidBody, req);
    await existingVideo(vid);
    return { identity, vid };
  };

  const servePage: RequestHandler = async (req, res) => {
    const identity = identify(req, jwtSecret);
    // pageNumber is validated for old clients but never moves the offset (R12).
    const { pageSize } = validateQuery(pageQuery, req);
    res.type('application/json').send(serializePage(await feed.nextPage(identity, pageSize, requestIdOf(res)), catalog));
  };
  // HEAD is GET without a body (SPEC C): the same authentication, validation and status (a 503
  // when GET's would be), but it never claims (R11: positions are consumed only when served).
  const headOfPage: RequestHandler = async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { pageSize } = validateQuery(pageQuery, req);
    await feed.peekPage(identity, pageSize, requestIdOf(res));
    res.type('application/json').status(200).end();
  };
  router.head('/api/app/recommend/vid/list', headOfPage);
  router.get('/api/app/recommend/vid/list', servePage);
  // The older client's endpoint: the same ring service, no response cache (R13).
  router.head('/api/app/vid/module/short/all', headOfPage);
  router.get('/api/app/vid/module/short/all', servePage);

  router.get('/api/app/recommend/vid/ad', async (req, res) => {
    identify(req, jwtSecret);
    const { pageSize } = validateQuery(adQuery, req);
    res.json({ vInfos: await catalog.randomAds(pageSize) });
  });

  // HEAD must not register the watch that GET with `vid` registers (SPEC C: no side effect).
  router.head('/api/app/vid/user/count', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { vid } = validateQuery(countQuery, req);
    if (vid === undefined) await inRedis(watches.count(identity.key), 'watch-count');
    else await existingVideo(vid);
    res.type('application/json').status(200).end();
  });

  router.get('/api/app/vid/user/count', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { vid } = validateQuery(countQuery, req);
    if (vid === undefined) {
      res.json(await inRedis(watches.count(identity.key), 'watch-count'));
      return;
    }
    await existingVideo(vid);
    const [count] = await inRedis(Promise.all([watches.register(identity.key, vid), history.recordView(identity.key, vid)]), 'watch-count');
    res.json(count);
  });

  router.post('/api/app/vid/view', async (req, res) => {
    const { identity, vid } = await callerAndVideo(req);
    await inRedis(history.recordView(identity.key, vid), 'view-history');
    await feed.readout.record(identity, 'view', vid);
    res.json({ ok: true });
  });

  router.post('/api/app/recommend/vid/not-interested', async (req, res) => {
    const { identity, vid } = await callerAndVideo(req);
    await inRedis(history.markNotInterested(identity.key, vid), 'not-interested');
    await feed.readout.record(identity, 'not-interested', vid);
    logger.info('video marked not interested', { requestId: requestIdOf(res), vid });
    res.json({ ok: true });
  });

  router.post('/api/app/recommend/vid/not-interested/undo', async (req, res) => {
    const { identity, vid } = await callerAndVideo(req);
    const removed = await inRedis(history.undoNotInterested(identity.key, vid), 'not-interested');
    res.json({ ok: true, removed: removed > 0 });
  });

  return router;
}
