/** Admin endpoints of the API, behind the admin credentials (SPEC C). */
import { Router } from 'express';
import Joi from 'joi';
import { basicAuth } from '@feed/admin-auth';
import { VERSION_PATTERN, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { notFound } from '../http/errors';
import { DEVICE_ID, guestIdentity, USER_ID, userIdentity } from '../http/identity';
import { validateQuery } from '../http/validate';
import { explainNextPage } from '../feed/explain';
import type { VideoCatalog } from '../feed/video-catalog';
import type { UserHistory } from '../users/user-history';
import { MAX_PAGE_SIZE } from './feed-routes';

const explainQuery = Joi.object({
  user: Joi.string().pattern(USER_ID),
  device: Joi.string().pattern(DEVICE_ID),
  version: Joi.string().pattern(VERSION_PATTERN),
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
    const identity = query.user ? userIdentity(query.user) : guestIdentity(query.device!);
    const version = query.version ?? (await deps.redis.get(deps.keys.current));
    if (!version) throw notFound('no current version');
    const explanation = await explainNextPage(deps, identity, version, query.pageSize);
    if (!explanation) throw notFound(`version ${version} has no queue in Redis`);
    res.json(explanation);
  });
  return router;
}
