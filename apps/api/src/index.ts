/**
 * The API's public entry: what the CLI, the benchmarks and cross-package tests may use.
 * `main.ts` is the runnable entry (`node dist/main.js`).
 */
export { clientCors, createApp, type Api, type ApiDeps } from './app';
export { startApi, type RunningApi } from './main';
export { createApiMetrics, declareHttpRoutes, HTTP_STATUSES, type ApiMetrics } from './metrics';
export { explainNextPage, type Explanation } from './feed/explain';
export { VideoCatalog } from './feed/video-catalog';
export { guestIdentity, userIdentity, type Identity } from './http/identity';
export { InteractionService } from './interactions/interaction-service';
export { QueueCopies } from './feed/queue-copies';
export { openApiDocument } from './openapi';
