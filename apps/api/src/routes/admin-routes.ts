/** Admin endpoints of the API, behind the admin credentials (SPEC C): explain, the rollout kill switch (R16), the rollout ramp (R23) and on-call's audit trail (D6). */
import { Router, type Response } from 'express';
import Joi from 'joi';
import { adminUserOf, basicAuth, ROUTING } from '@feed/http';
import type { Config } from '@feed/config';
import {
  RolloutBusyError,
  rampAskOf,
  rampAskSchema,
  resolveRollout,
  VERSION_PATTERN,
  type AuditTrail,
  type RampCommandBy,
  type RampCommandResult,
  type Rollout,
  type RolloutStore,
} from '@feed/storage';
import { AppError, notFound } from '@feed/http';
import { DEVICE_ID, guestIdentity, USER_ID, userIdentity } from '../http/identity';
import { budgetOf } from '../http/request-budget';
import { validateBody, validateQuery } from '../http/validate';
import { explainNextPage, type ExplainDeps } from '../feed/explain';
import type { FeedReadStateCache } from '../feed/feed-read-state';
import { MAX_PAGE_SIZE } from './feed-routes';

const REALM = 'feed-api';

export const explainQuery = Joi.object<{ user?: string; device?: string; version?: string; pageSize: number }>({
  user: Joi.string().pattern(USER_ID),
  device: Joi.string().pattern(DEVICE_ID),
  version: Joi.string().pattern(VERSION_PATTERN),
  pageSize: Joi.number().integer().min(1).max(MAX_PAGE_SIZE).default(20),
}).xor('user', 'device');

export const auditQuery = Joi.object<{ count: number }>({ count: Joi.number().integer().min(1).max(1000).default(50) });

/** Strict types: "true" or "50" as strings are rejected, so a typo never half-applies. */
export const rolloutBody = Joi.object<Partial<Rollout>>({ enabled: Joi.boolean().strict(), percent: Joi.number().integer().strict().min(0).max(100) }).or('enabled', 'percent');

/** A ramp (R23): its ranges are storage's schema, shared with the CLI; out of range is a 400 naming the field. */
export const rampBody = rampAskSchema;

/** A ramp command's refusal as a 4xx naming why. */
function rampAnswer(result: RampCommandResult) {
  if (result.ok) return result.state;
  throw new AppError({ conflict: 409, missing: 404, busy: 409 }[result.kind], result.kind === 'missing' ? 'not_found' : 'conflict', result.error);
}

/** The explain's collaborators and the rollout's records (the ramp, the override: storage's RolloutStore). */
export interface AdminRouteDeps extends ExplainDeps {
  rollouts: RolloutStore;
  config: Pick<Config, 'adminUser' | 'adminPassword' | 'shortRecommendV2Enabled' | 'shortRecommendV2Percent'>;
  readState: FeedReadStateCache;
  /** On-call's trail, in MongoDB (D6). */
  audit: AuditTrail;
}

export function adminRoutes(deps: AdminRouteDeps): Router {
  const { config, rollouts, readState, audit } = deps;
  const router = Router(ROUTING);
  router.use('/api/admin', basicAuth(config.adminUser, config.adminPassword, REALM));

  router.get('/api/admin/explain', async (req, res) => {
    const query = validateQuery(explainQuery, req);
    const identity = query.user ? userIdentity(query.user) : guestIdentity(query.device!);
    const budget = budgetOf(res);
    const version = query.version ?? (await budget.redis.run(() => deps.versions.current(), 'current version'));
    if (!version) throw notFound('no current version');
    const explanation = await explainNextPage(deps, identity, version, query.pageSize, budget);
    if (!explanation) throw notFound(`version ${version} has no queue in Redis`);
    res.json(explanation);
  });

  const environment: Rollout = { enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent };
  /** The values in force after a change; this instance applies them at once, the others within CURRENT_CACHE_MS. */
  const rolloutInForce = async (res: Response) => {
    readState.invalidate();
    return { ...resolveRollout(environment, await budgetOf(res).redis.run(() => rollouts.override(), 'rollout override')), environment };
  };
  router.get('/api/admin/rollout', async (_req, res) => {
    res.json(await rolloutInForce(res));
  });
  // Within the request's budget: a stalled Redis is a 503, a frozen MongoDB an audit entry logged instead of written, never a hang.
  const by = (res: Response): RampCommandBy => ({ environment, trail: audit, who: { actor: adminUserOf(res), via: 'api' }, budget: budgetOf(res) });
  const change = async (res: Response, value: Partial<Rollout> | 'clear') => {
    // A manual percent or the kill switch always wins over a ramp (R23): it pauses it in the same step.
    const after = await rollouts.changeRollout(by(res), value).catch((err: unknown) => {
      throw err instanceof RolloutBusyError ? new AppError(409, 'conflict', err.message) : err;
    });
    // The values the change read back, before its audit write: a MongoDB that is down does not spend the answer's deadline.
    readState.invalidate();
    res.json({ ...after, environment });
  };
  router.get('/api/admin/rollout/ramp', async (_req, res) => {
    const { state, error } = await budgetOf(res).redis.run(() => rollouts.ramp(), 'ramp');
    if (!state) throw notFound(error ?? 'no ramp is stored');
    res.json(state);
  });
  router.put('/api/admin/rollout/ramp', async (req, res) => {
    res.json(rampAnswer(await rollouts.startRamp(by(res), rampAskOf(validateBody(rampBody, req)))));
  });
  router.post('/api/admin/rollout/ramp/pause', async (_req, res) => {
    res.json(rampAnswer(await rollouts.pauseRamp(by(res))));
  });
  router.post('/api/admin/rollout/ramp/resume', async (_req, res) => {
    res.json(rampAnswer(await rollouts.resumeRamp(by(res))));
  });
  router.put('/api/admin/rollout', async (req, res) => change(res, validateBody(rolloutBody, req)));
  router.delete('/api/admin/rollout', async (_req, res) => change(res, 'clear'));
  router.get('/api/admin/audit', async (req, res) => {
    const { count } = validateQuery(auditQuery, req);
    res.json({ entries: await audit.read(count, budgetOf(res).mongo) });
  });
  return router;
}
