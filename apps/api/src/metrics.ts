/** Read-side metrics of SPEC R18, on a registry per app instance (tests build several apps). */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Why a ring candidate was skipped; `unreadable_id` and `non_numeric_field` count odd documents read from MongoDB (R1a). */
export type SkipReason = 'invalid' | 'seen' | 'not_interested' | 'own' | 'duplicate' | 'unreadable_id' | 'non_numeric_field';

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
    pages: new Counter({ name: 'feed_pages_total', help: 'Feed pages served, by strategy (ring, previous-version, legacy-set, mongo-fallback)', labelNames: ['strategy'], registers: [registry] }),
    emptyPages: new Counter({ name: 'feed_empty_pages_total', help: 'Feed pages served with no video', labelNames: ['strategy'], registers: [registry] }),
    skipped: new Counter({ name: 'feed_skipped_videos_total', help: 'Candidates skipped by the ring read, by reason; unreadable_id (skipped) and non_numeric_field (a field read as 0) count odd video documents as read from MongoDB on any strategy', labelNames: ['reason'], registers: [registry] }),
    redisFailures: new Counter({ name: 'feed_redis_failures_total', help: 'Redis or Lua failures, by operation (the read path, views, not-interested marks, watch counts)', labelNames: ['operation'], registers: [registry] }),
    claimsGivenBack: new Counter({
      name: 'feed_claims_given_back_total',
      help: 'Ring claims whose answer came after the request had served another page: given back (result=given-back) or, when a later claim had moved the offset on, left consumed (result=lost)',
      labelNames: ['result'],
      registers: [registry],
    }),
    variantPages: new Counter({ name: 'feed_variant_pages_total', help: 'Feed pages served, by the variant of the user (ring or legacy, from the rollout bucket; D7)', labelNames: ['variant'], registers: [registry] }),
    variantEngagement: new Counter({
      name: 'feed_variant_engagement_total',
      help: 'Views, likes, collects, comments, shares and not-interested marks, by the variant of the user (D7)',
      labelNames: ['variant', 'action'],
      registers: [registry],
    }),
    videoCache: new Counter({ name: 'feed_video_cache_requests_total', help: 'Video documents looked up in the instance cache, by result (hit, miss)', labelNames: ['result'], registers: [registry] }),
    queueCopyBytes: new Gauge({ name: 'feed_queue_copy_bytes', help: 'Bytes held by the instance copies of published queues (R22)', registers: [registry] }),
    queueCopyLoads: new Counter({ name: 'feed_queue_copy_loads_total', help: 'Published queues copied into this instance and verified', registers: [registry] }),
    degradations: new Counter({ name: 'feed_degradations_total', help: 'Pages served by a fallback strategy, by kind (previous-version, legacy-set, mongo-fallback)', labelNames: ['kind'], registers: [registry] }),
    rolloutEnabled: new Gauge({ name: 'feed_rollout_enabled', help: 'Whether the ring feed is enabled in this instance (R16, override or environment)', registers: [registry] }),
    rolloutPercent: new Gauge({ name: 'feed_rollout_percent', help: 'Share of users served by the ring feed in this instance (R16)', registers: [registry] }),
    dependencyUp: new Gauge({ name: 'feed_dependency_up', help: 'Whether a store answered the last readiness probe (1) or not (0)', labelNames: ['dependency'], registers: [registry] }),
    currentVersion: new Gauge({ name: 'feed_current_version', help: 'The version (YYYYMMDD) this instance last read as current', registers: [registry] }),
  };
}

export type ApiMetrics = ReturnType<typeof createApiMetrics>;
