/** Admin endpoints of the API, behind the admin credentials (SPEC C). */
import { Router } from 'express';
import Joi from 'joi';
import { basicAuth } from '@feed/admin-auth';
import type { Redis, RedisKeys, VideoModel } from '@feed/storage';
import { notFound } from '../http/errors';
import { validateQuery } from '../http/validate';
import { explainNextPage } from '../feed/explain';
import type { VideoCatalog } from '../feed/video-catalog';
import type { UserHistory } from '../users/user-history';
import { MAX_PAGE_SIZE } from './feed-routes';

const explainQuery = Joi.object({
  user: Joi.string().pattern(/^[A-Za-z0-9_:.@-]{1,64}$/),
  device: Joi.string().pattern(/^[A-Za-z0-9_-]{8,64}$/),
  version: Joi.string().pattern(/^\d{8}$/),
  pageSize: Joi.number().integer().min(1).max(MAX_PAGE_SIZE).default(20),
}).xor('user', 'device');

export interface AdminRouteDeps {
  redis: Redis;
  keys: RedisKeys;
  catalog: VideoCatalog;
  videos: VideoModel;
  history: UserHistory;
  adminUser: string;
  adminPassword: string;
}

export function adminRoutes(deps: AdminRouteDeps): Router {
  const router = Router();
  router.use('/api/admin', basicAuth(deps.adminUser, deps.adminPassword));
  router.get('/api/admin/explain', async (req, res) => {
    const query = validateQuery(explainQuery, req) as { user?: string; device?: string; version?: string; pageSize: number };
    const identity = query.user ? { key: `u:${query.user}`, userId: query.user } : { key: `g:${query.device}`, deviceId: query.device };
    const version = query.version ?? (await deps.redis.get(deps.keys.current));
    if (!version) throw notFound('no current version');
    const explanation = await explainNextPage(deps, identity, version, query.pageSize);
    if (!explanation) throw notFound(`version ${version} has no queue in Redis`);
    res.json(explanation);
  });
  return router;
}
