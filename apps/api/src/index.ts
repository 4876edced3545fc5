/** The API's public entry for the CLI, benchmarks and cross-package tests; `main.ts` is the runnable one. */
export { clientCors, createApp, type Api, type ApiDeps } from './app';
export { startApi, type RunningApi } from './main';
export { createApiMetrics, declareHttpRoutes, HTTP_STATUSES, type ApiMetrics } from './metrics';
export { explainNextPage, type Explanation } from './feed/explain';
export { VideoCatalog } from './feed/video-catalog';
export { guestIdentity, userIdentity, type Identity } from './http/identity';
export { InteractionService } from './interactions/interaction-service';
export { QueueCopies } from './feed/queue-copies';
export { openApiDocument } from './openapi';
