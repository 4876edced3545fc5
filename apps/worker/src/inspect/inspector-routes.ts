/**
 * The queue inspector (the dashboard's credentials): versions, blocks, scores, shadow diff, the held
 * version (R23), settings; `POST api/held/V/promote` (`dismiss`: an older day's).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import type { Config } from '@feed/config';
import { adminUserOf, AppError, ROUTING } from '@feed/http';
import type { Logger } from '@feed/logger';
import { VERSION_PATTERN } from '@feed/storage';
import { promoteHeldVersion, PromoteRefusedError } from '../daily-build/promote-held';
import { inspectorSummary, type InspectorDeps } from './inspect-versions';

export interface InspectorRoutesDeps extends InspectorDeps {
  config: InspectorDeps['config'] & Pick<Config, 'shortRecommendKeyTTLHours' | 'buildLockTtlMs'>;
  logger: Logger;
}

// Beside `src/` and `dist/` alike: the page ships with the deployable (package.json `files`).
const PAGE = readFileSync(path.join(__dirname, '../../assets/inspector.html'), 'utf8');

export function inspectorRoutes(deps: InspectorRoutesDeps): Router {
  const router = Router(ROUTING);
  router.get('/', (req, res) => {
    // The page loads `api/summary` relative to itself: `/admin/inspector` must become `/admin/inspector/`.
    if (!req.originalUrl.split('?')[0].endsWith('/')) return res.redirect(301, `${req.baseUrl}/`);
    res.type('html').send(PAGE);
  });
  router.get('/api/summary', async (_req, res) => {
    res.json(await inspectorSummary(deps));
  });
  // R23: on-call's decision on a held version, as the admin user (D6): promote, or dismiss an older day.
  for (const decision of ['promote', 'dismiss'] as const) router.post(`/api/held/:version/${decision}`, async (req, res) => {
    const { version } = req.params;
    if (!VERSION_PATTERN.test(version)) throw new AppError(400, 'bad_request', `a version is YYYYMMDD, got "${version}"`);
    const { store, logger, audit, config } = deps;
    try {
      const who = { actor: adminUserOf(res), via: 'api' } as const;
      const result = await promoteHeldVersion({ store, logger, audit, keyTtlHours: config.shortRecommendKeyTTLHours, lockTtlMs: config.buildLockTtlMs }, version, who, decision);
      res.json({ version: result.version, status: result.status, replaced: result.replaced, current: result.current, reasons: result.held.verdict.reasons });
    } catch (err) {
      if (err instanceof PromoteRefusedError) throw new AppError(err.status, err.status === 404 ? 'not_held' : 'conflict', err.message);
      throw err;
    }
  });
  return router;
}
