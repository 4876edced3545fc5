/** Read-side metrics of SPEC R18, on a registry per app instance (tests build several apps). */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export type Degradation = 'previous-version' | 'legacy-set' | 'mongo-fallback';
export type SkipReason = 'invalid' | 'seen' | 'not_interested' | 'own' | 'duplicate';

export function createApiMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpDuration: new Histogram({
      name: 'feed_http_request_duration_seconds',
      help: 'API request latency',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    pages: new Counter({ name: 'feed_pages_total', help: 'Feed pages served, by strategy', labelNames: ['strategy'], registers: [registry] }),
    emptyPages: new Counter({ name: 'feed_empty_pages_total', help: 'Feed pages served with no video', labelNames: ['strategy'], registers: [registry] }),
    skipped: new Counter({ name: 'feed_skipped_videos_total', help: 'Candidates skipped by the ring read, by reason', labelNames: ['reason'], registers: [registry] }),
    redisFailures: new Counter({ name: 'feed_redis_failures_total', help: 'Redis or Lua failures on the read path', labelNames: ['operation'], registers: [registry] }),
    degradations: new Counter({ name: 'feed_degradations_total', help: 'Reads served by a fallback, by kind', labelNames: ['kind'], registers: [registry] }),
    currentVersion: new Gauge({ name: 'feed_current_version', help: 'The version (YYYYMMDD) this instance last read as current', registers: [registry] }),
  };
}

export type ApiMetrics = ReturnType<typeof createApiMetrics>;
