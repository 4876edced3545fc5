/** Read-side metrics of SPEC R18, on a registry per app instance (tests build several apps). */
import { getHeapStatistics } from 'node:v8';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { COUNTER_KINDS, STORES, VARIANT_EVENTS, VARIANTS, type CounterKind, type Store } from '@feed/storage';
import { declareLabels, dependencyUpGauge } from '@feed/telemetry';
import { SKIP_REASONS, STRATEGIES } from './labels';

/** Label values declared once: exported at 0 from the start (alerts see a first event); an undeclared one throws. */
export const DEGRADATION_KINDS = ['previous-version', 'legacy-set', 'mongo-fallback'] as const;
/** The feed's strategies, its settings and user-filter reads, and the other endpoints' Redis calls. */
export const REDIS_OPERATIONS = [...STRATEGIES, 'settings', 'user-filter', 'watch-count', 'view-history', 'not-interested'] as const;
export const CLAIM_RESULTS = ['given-back', 'lost'] as const;
export const CACHE_RESULTS = ['hit', 'miss'] as const;
/** Answered statuses; any other is recorded as its class (`5xx`...), keeping each route's series declared and bounded. */
export const HTTP_STATUSES = ['200', '400', '401', '404', '500', '503', '2xx', '3xx', '4xx', '5xx'] as const;
export const UNMATCHED_ROUTE = 'unmatched';

/** The caches that hold a share of API_MEMORY_BUDGET_MB (`feed_cache_bytes{cache}`). */
export const MEMORY_CACHES = ['video', 'token', 'queue_copies'] as const;
export type MemoryCache = (typeof MEMORY_CACHES)[number];

export function createApiMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const counter = (name: string, help: string, labels: Record<string, readonly string[]>) => declareLabels(new Counter({ name, help, labelNames: Object.keys(labels), registers: [registry] }), labels);
  /** What each cache holds, read at scrape time; the app that owns the caches sets it. */
  const cacheSizes: { read?: () => Record<MemoryCache, number> } = {};
  /** The stores' probes (health-routes.ts sets it): `feed_dependency_up` at each scrape, within SCRAPE_WAIT_MS. */
  const storeHealth: { read?: () => Promise<Record<Store, number>> } = {};
  /** The late-landing writes an instance follows (app.ts sets it), read at scrape time. */
  const lateWrites: { read?: () => number } = {};
  const cacheBytes = new Gauge({
    name: 'feed_cache_bytes',
    help: 'Estimated bytes held by each in-process cache (video documents, verified tokens, queue copies), against its share of API_MEMORY_BUDGET_MB',
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      const sizes = cacheSizes.read?.();
      if (sizes) for (const cache of MEMORY_CACHES) this.set({ cache }, sizes[cache]);
    },
  });
  const cacheBudgetBytes = new Gauge({ name: 'feed_cache_budget_bytes', help: "Each in-process cache's share of API_MEMORY_BUDGET_MB, in bytes", labelNames: ['cache'], registers: [registry] });
  for (const cache of MEMORY_CACHES) {
    cacheBytes.set({ cache }, 0);
    cacheBudgetBytes.set({ cache }, 0);
  }
  const heapLimit = new Gauge({ name: 'feed_heap_limit_bytes', help: "V8's heap size limit in this process (set from API_MEMORY_BUDGET_MB by the image's command)", registers: [registry] });
  heapLimit.set(getHeapStatistics().heap_size_limit);
  const metrics = {
    cacheSizes,
    cacheBytes,
    cacheBudgetBytes,
    heapLimit,
    memoryBudget: new Gauge({ name: 'feed_memory_budget_bytes', help: 'API_MEMORY_BUDGET_MB of this instance, in bytes', registers: [registry] }),
    registry,
    httpDuration: new Histogram({
      name: 'feed_http_request_duration_seconds',
      help: 'API request latency, by method, route and status (a status not in HTTP_STATUSES as its class, e.g. 5xx)',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    pages: counter('feed_pages_total', 'Feed pages served, by strategy (ring, previous-version, legacy-set, mongo-fallback)', { strategy: STRATEGIES }),
    emptyPages: counter('feed_empty_pages_total', 'Feed pages served with no video', { strategy: STRATEGIES }),
    skipped: counter('feed_skipped_videos_total', 'Candidates skipped by the ring read, by reason; unreadable_id (skipped) and non_numeric_field (a field read as 0) count odd video documents as read from MongoDB on any strategy', { reason: SKIP_REASONS }),
    redisFailures: counter('feed_redis_failures_total', 'Redis or Lua failures, by operation (the read path, views, not-interested marks, watch counts)', { operation: REDIS_OPERATIONS }),
    claimsGivenBack: counter(
      'feed_claims_given_back_total',
      'Ring claims whose answer came after the request had served another page: given back exactly (result=given-back) or with positions left consumed unserved (result=lost: the offset was gone, or an older hole fell out of the 16 a cursor keeps)',
      { result: CLAIM_RESULTS },
    ),
    newDevicesLimited: new Counter({ name: 'feed_new_devices_limited_total', help: 'Requests of a new guest device id answered 429: its client address started NEW_DEVICES_PER_ADDRESS devices in the window (R23)', registers: [registry] }),
    lateClaims: new Counter({ name: 'feed_late_claims_total', help: 'Ring claims Redis ran but answered after the request had given up on them (a stall, a busy API): given back, not counted as Redis failures', registers: [registry] }),
    clockSkew: new Gauge({ name: 'feed_clock_skew_seconds', help: "Redis's clock (TIME) minus this host's, measured over a round trip; nothing on the read path depends on it (R11)", registers: [registry] }),
    variantPages: counter('feed_variant_pages_total', 'Feed pages served, by the variant of the user (ring or legacy, from the rollout bucket; D7)', { variant: VARIANTS }),
    variantEngagement: counter('feed_variant_engagement_total', 'Views, likes, collects, comments, shares and not-interested marks, by the variant of the user (D7)', {
      variant: VARIANTS,
      action: VARIANT_EVENTS.filter((event) => event !== 'page'),
    }),
    videoCache: counter('feed_video_cache_requests_total', 'Video documents looked up in the instance cache, by result (hit, miss)', { result: CACHE_RESULTS }),
    queueCopyBytes: new Gauge({ name: 'feed_queue_copy_bytes', help: 'Bytes held by the instance copies of published queues (R22)', registers: [registry] }),
    queueCopyLoads: new Counter({ name: 'feed_queue_copy_loads_total', help: 'Published queues copied into this instance and verified', registers: [registry] }),
    lateWrites,
    lateWritesFollowed: new Gauge({ name: 'feed_interaction_late_writes_followed', help: 'Record writes that failed (budget, election) and are looked for in case they landed, at most 1,000 an instance: an outage\'s backlog', registers: [registry], collect() { this.set(lateWrites.read?.() ?? 0); } }),
    talliesDeferred: counter(
      'feed_interaction_tallies_deferred_total',
      'Tallies of a video\'s counters that failed (MongoDB refused or timed out), by kind of record: their records are counted by the next tally or the repair job (R3)',
      { kind: Object.keys(COUNTER_KINDS) as CounterKind[] },
    ),
    degradations: counter('feed_degradations_total', 'Pages served by a fallback strategy, by kind (previous-version, legacy-set, mongo-fallback)', { kind: DEGRADATION_KINDS }),
    rolloutEnabled: new Gauge({ name: 'feed_rollout_enabled', help: 'Whether the ring feed is enabled in this instance (R16, override or environment)', registers: [registry] }),
    rolloutPercent: new Gauge({ name: 'feed_rollout_percent', help: 'Share of users served by the ring feed in this instance (R16)', registers: [registry] }),
    storeHealth,
    dependencyUp: dependencyUpGauge(Gauge, registry, STORES, async () => storeHealth.read?.()),
    currentVersion: new Gauge({ name: 'feed_current_version', help: 'The version (YYYYMMDD) this instance last read as current', registers: [registry] }),
  };
  return metrics;
}

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'] as const;

/** The labels of one request, from its method, its route (undefined when none matched) and its status. */
export type RequestLabels = (method: string, route: string | undefined, status: number) => { method: string; route: string; status: string };

/** Declares the latency histogram over `routes` (a GET answers HEAD too) and `unmatched`, at every status. */
export function declareHttpRoutes(histogram: Histogram, routes: readonly string[]): RequestLabels {
  const pairs = new Set([...routes.flatMap((route) => (route.startsWith('GET ') ? [route, `HEAD ${route.slice(4)}`] : [route])), ...HTTP_METHODS.map((method) => `${method} ${UNMATCHED_ROUTE}`)]);
  for (const pair of pairs) {
    const [method, route] = pair.split(' ', 2);
    for (const status of HTTP_STATUSES) histogram.zero({ method, route, status });
  }
  const observe = histogram.observe.bind(histogram);
  histogram.observe = ((labels: Record<string, string | number>, value: number) => {
    if (!pairs.has(`${labels.method} ${labels.route}`) || !(HTTP_STATUSES as readonly string[]).includes(String(labels.status))) {
      throw new Error(`metric feed_http_request_duration_seconds: ${String(labels.method)} ${String(labels.route)} status ${String(labels.status)} was not declared`);
    }
    observe(labels, value);
  }) as Histogram['observe'];
  // Built once per method, route and status (a bounded set), not per request.
  const built = new Map<string, ReturnType<RequestLabels>>();
  return (rawMethod, route, status) => {
    const key = `${rawMethod} ${route} ${status}`;
    let labels = built.get(key);
    if (!labels) {
      const [method, code] = [(HTTP_METHODS as readonly string[]).includes(rawMethod) ? rawMethod : 'OTHER', String(status)];
      const statusLabel = (HTTP_STATUSES as readonly string[]).includes(code) ? code : `${code[0]}xx`;
      built.set(key, (labels = { method, route: route !== undefined && pairs.has(`${method} ${route}`) ? route : UNMATCHED_ROUTE, status: statusLabel }));
    }
    return labels;
  };
}

export type ApiMetrics = ReturnType<typeof createApiMetrics>;
