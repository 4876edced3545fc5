/** The H5 client's feed endpoints (SPEC R12–R15, V1, V3). */
import { Router, type Request, type RequestHandler, type Response } from 'express';
import Joi from 'joi';
import { logger } from '@feed/logger';
import { notFound, requestIdOf, ROUTING, unavailable } from '@feed/http';
import type { MongoBudget, UserHistory, WatchCounter } from '@feed/storage';
import { identify } from '../http/identity';
import { budgetOf } from '../http/request-budget';
import { objectId, validateBody, validateQuery, vidBody } from '../http/validate';
import type { FeedService } from '../feed/feed-service';
import { pageBody, type VideoCatalog } from '../feed/video-catalog';
import type { VariantReadout } from '../feed/variant-readout';

/** Largest page a client may ask for: more than a few swipes ahead is wasted work. */
export const MAX_PAGE_SIZE = 50;

// Unknown query parameters (cache busters, tracking) are ignored, as the old service did. An empty
// value is an absent one (R12's own call is `?pageNumber=&pageSize=`); pageNumber 0 is a 0-based client's first page.
export const pageQuery = Joi.object<{ pageNumber: number; pageSize: number }>({
  pageNumber: Joi.number().integer().min(0).max(1_000_000).empty('').default(1).description('Accepted for old clients; never moves the offset (R12)'),
  pageSize: Joi.number().integer().min(1).max(MAX_PAGE_SIZE).empty('').default(20).description('Videos in the page'),
}).unknown(true);
/** A whole number from 1 to 9,999,999 written plainly (what `pageQuery` accepts, before its max). */
const PLAIN = /^[1-9][0-9]{0,6}$/;
const plainUpTo = (value: unknown, max: number) => (typeof value === 'string' && PLAIN.test(value) && Number(value) <= max ? Number(value) : undefined);

/** `pageQuery`'s pageSize without joi when the query is plainly valid (every page); anything else gets joi's answer (the 400s). */
export function pageSizeOf(req: Pick<Request, 'query'>): number {
  const { pageSize, pageNumber } = req.query;
  const size = pageSize === undefined ? 20 : plainUpTo(pageSize, MAX_PAGE_SIZE);
  return size !== undefined && (pageNumber === undefined || plainUpTo(pageNumber, 1_000_000) !== undefined) ? size : validateQuery(pageQuery, req).pageSize;
}
export const countQuery = Joi.object<{ vid?: string }>({ vid: objectId.description('With it, the watch of this video is registered (once per user, video and day)') }).unknown(true);
export const adQuery = Joi.object<{ pageSize: number }>({ pageSize: Joi.number().integer().min(1).max(10).default(3).description('Ad videos wanted') }).unknown(true);

export interface FeedRouteDeps {
  feed: FeedService;
  catalog: VideoCatalog;
  history: UserHistory;
  watches: WatchCounter;
  readout: VariantReadout;
  jwtSecret: string;
  /** Counts a failed Redis operation in `feed_redis_failures_total{operation}` (D5). */
  onRedisFailure(operation: RedisOperation): void;
}

/** The Redis operations of these routes, as `feed_redis_failures_total` labels them. */
type RedisOperation = 'watch-count' | 'view-history' | 'not-interested';

const DESCRIBED: Record<RedisOperation, string> = { 'watch-count': 'watch count', 'view-history': 'view history', 'not-interested': 'not-interested marks' };

export function feedRoutes({ feed, catalog, history, watches, readout, jwtSecret, onRedisFailure }: FeedRouteDeps): Router {
  const router = Router(ROUTING);

  /** Views, marks and watch counts live only in Redis: without it (past the request's deadline) they are unavailable (counted), not a 500. */
  const inRedis = <T>(res: Response, call: () => Promise<T>, operation: RedisOperation): Promise<T> =>
    budgetOf(res).redis.run(call, DESCRIBED[operation]).catch((err: unknown) => {
      onRedisFailure(operation);
      throw unavailable(`${DESCRIBED[operation]} unavailable: ${err instanceof Error ? err.message : String(err)}`);
    });

  /** 404 unless the id names a video that exists; 400 for a malformed id is the schema's job. */
  const existingVideo = async (vid: string, budget: MongoBudget) => {
    if (!(await catalog.load([vid], budget)).has(vid)) throw notFound(`video ${vid} does not exist`);
  };

  /** The caller and the existing video named by the body's `vid`. */
  const callerAndVideo = async (req: Request, res: Response) => {
    const identity = identify(req, jwtSecret);
    const { vid } = validateBody(vidBody, req);
    await existingVideo(vid, budgetOf(res).mongo);
    return { identity, vid };
  };

  const servePage: RequestHandler = async (req, res) => {
    const identity = identify(req, jwtSecret);
    // pageNumber is validated for old clients but never moves the offset (R12).
    const pageSize = pageSizeOf(req);
    // Past Express's `send` (its type parsing): Node sets the length of one buffer.
    res.setHeader('Content-Type', 'application/json; charset=utf-8').end(pageBody(await feed.nextPage(identity, pageSize, budgetOf(res), requestIdOf(res))));
  };
  // HEAD is GET without a body (SPEC C): the same authentication, validation and status (a 503
  // when GET's would be), but it never claims (R11: positions are consumed only when served).
  const headOfPage: RequestHandler = async (req, res) => {
    const identity = identify(req, jwtSecret);
    const pageSize = pageSizeOf(req);
    await feed.peekPage(identity, pageSize, budgetOf(res), requestIdOf(res));
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
    res.json({ vInfos: await catalog.randomAds(pageSize, budgetOf(res).mongo) });
  });

  // HEAD must not register the watch that GET with `vid` registers (SPEC C: no side effect).
  router.head('/api/app/vid/user/count', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { vid } = validateQuery(countQuery, req);
    if (vid === undefined) await inRedis(res, () => watches.count(identity.key), 'watch-count');
    else await existingVideo(vid, budgetOf(res).mongo);
    res.type('application/json').status(200).end();
  });

  router.get('/api/app/vid/user/count', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { vid } = validateQuery(countQuery, req);
    if (vid === undefined) return void res.json(await inRedis(res, () => watches.count(identity.key), 'watch-count'));
    await existingVideo(vid, budgetOf(res).mongo);
    const [count, sight] = await inRedis(res, () => Promise.all([watches.register(identity.key, vid), history.recordView(identity.key, vid)]), 'watch-count');
    // A guest's record admits a video's view once, whichever call records it first (the view call's readout would find it seen).
    if (sight) await readout.record(identity, 'view', budgetOf(res).redis, vid, sight);
    res.json(count);
  });

  router.post('/api/app/vid/view', async (req, res) => {
    const { identity, vid } = await callerAndVideo(req, res);
    const sight = await inRedis(res, () => history.recordView(identity.key, vid), 'view-history');
    await readout.record(identity, 'view', budgetOf(res).redis, vid, sight);
    res.json({ ok: true });
  });

  router.post('/api/app/recommend/vid/not-interested', async (req, res) => {
    const { identity, vid } = await callerAndVideo(req, res);
    await inRedis(res, () => history.markNotInterested(identity.key, vid), 'not-interested');
    await readout.record(identity, 'not-interested', budgetOf(res).redis, vid);
    logger.info('video marked not interested', { requestId: requestIdOf(res), vid });
    res.json({ ok: true });
  });

  router.post('/api/app/recommend/vid/not-interested/undo', async (req, res) => {
    const { identity, vid } = await callerAndVideo(req, res);
    const removed = await inRedis(res, () => history.undoNotInterested(identity.key, vid), 'not-interested');
    res.json({ ok: true, removed: removed > 0 });
  });

  return router;
}
