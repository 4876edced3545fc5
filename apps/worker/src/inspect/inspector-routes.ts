/**
 * The queue inspector (next to the dashboard, same credentials): versions, meta, block
 * composition, score distribution, the shadow version's diff, and the settings in force.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
import { inspectorSummary, type InspectorDeps } from './inspect-versions';

// Beside `src/` and `dist/` alike: the page ships with the deployable (package.json `files`).
const PAGE = readFileSync(path.join(__dirname, '../../assets/inspector.html'), 'utf8');

export function inspectorRoutes(deps: InspectorDeps): Router {
  const router = Router();
  router.get('/', (req, res) => {
    // The page loads `api/summary` relative to itself: `/admin/inspector` must become `/admin/inspector/`.
    if (!req.originalUrl.split('?')[0].endsWith('/')) {
      res.redirect(301, `${req.baseUrl}/`);
      return;
    }
    res.type('html').send(PAGE);
  });
  router.get('/api/summary', async (_req, res) => {
    res.json(await inspectorSummary(deps));
  });
  return router;
}
