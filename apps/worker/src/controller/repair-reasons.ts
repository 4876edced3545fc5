/** What the desired-state controller repairs (R21): the `reason` label of its metrics. */
export const REPAIR_REASONS = ['scheduler-missing', 'counter-scheduler-missing', 'no-version', 'version-behind', 'queue-incomplete', 'legacy-missing'] as const;
export type RepairReason = (typeof REPAIR_REASONS)[number];
