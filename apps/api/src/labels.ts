/** The read path's label unions, apart so the feed and metrics.ts need not import each other. */
export const STRATEGIES = ['ring', 'previous-version', 'legacy-set', 'mongo-fallback'] as const;
/** The feed's strategies, tried in order until one serves a page (feed-service.ts). */
export type StrategyName = (typeof STRATEGIES)[number];
/** Why a ring candidate was skipped; `unreadable_id` and `non_numeric_field` count odd documents read from MongoDB (R1a). */
export const SKIP_REASONS = ['invalid', 'seen', 'not_interested', 'own', 'duplicate', 'unreadable_id', 'non_numeric_field'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
