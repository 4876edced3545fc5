/**
 * Every Redis key of the service is built here and nowhere else (SPEC R10, V1, V3). Braces are
 * Cluster hash tags: a version's keys share a slot (its offset buckets have one each, R22), and so
 * do a user's, so one Lua script can touch them together.
 */

/** A version is the build's date in the business time zone: YYYYMMDD. */
export const VERSION_PATTERN = /^\d{8}$/;

export function createRedisKeys(prefix = '') {
  const p = `${prefix}recommend:short:`;
  return {
    /** STRING: the version the API serves. */
    current: `${p}current`,
    /** STRING: the version that was current before the last switch (R17's first fallback); current's slot. */
    previous: `{${p}current}:previous`,
    /** HASH enabled, percent, revision: on-call's run-time override of the rollout (R16); absent = environment. */
    rollout: `${p}rollout`,
    /** HASH revision, state (JSON): the self-driving rollout ramp (R23), in the override's slot: both change in one step (rollout-commit.lua). */
    ramp: `{${p}rollout}:ramp`,
    /** Where a past version kept the ramp (another slot); moved to `ramp` once by the driver (ramp-store.ts). */
    legacyRamp: `${p}ramp`,
    /** STRING owner token with expiry: the worker replica that runs the desired-state controller (R21). */
    controllerLease: `${p}controller-lease`,
    /** HASH reason, version, at, detail: the controller's last repair (R21), shown by the inspector. */
    lastRepair: `${p}last-repair`,
    /** HASH `reason|version|current` -> repair builds that completed without fixing it, one business day (R21). */
    repairAttempts: (day: string) => `${p}repair-attempts:${day}`,
    /** HASH reason, version, at, detail: the repair the controller stopped (R21), the inspector's error line; absent when none. */
    repairStopped: `${p}repair-stopped`,
    /** HASH `variant:event` -> count for one UTC hour (YYYYMMDDHH): the V2 vs legacy readout (D7). */
    variantStats: (hour: string) => `${p}variant-stats:${hour}`,
    /** HASH with expiry: one client's counted readout actions of one UTC day (YYYYMMDD), first successes and hourly counts (D7, lua/readout-admit.lua). */
    readoutClient: (client: string, day: string) => `${p}readout:{${client}}:${day}`,
    /** STRING: the last version built in shadow mode (R20); its keys are shadowQueue/shadowMeta. */
    shadow: `${p}shadow`,
    /** STRING JSON: the version the release gate held as a shadow (R23) with its verdict; absent when none is held. Shadow's slot (held-record.lua). */
    held: `{${p}shadow}:held`,
    /** LIST of 24-hex video ids in queue order. */
    queue: (version: string) => `${p}queue:{${version}}`,
    /** Where one build (named by its lock token) writes the queue, scores and meta before publishing them (same slot). */
    queueStaging: (version: string, build: string) => `${p}queue:{${version}}:staging:${build}`,
    scoresStaging: (version: string, build: string) => `${p}scores:{${version}}:staging:${build}`,
    metaStaging: (version: string, build: string) => `${p}meta:{${version}}:staging:${build}`,
    /** A shadow build's queue, scores and meta (R20): keys of its own in the version's slot, never read by the API. */
    shadowQueue: (version: string) => `${p}queue:{${version}}:shadow`,
    shadowScores: (version: string) => `${p}scores:{${version}}:shadow`,
    shadowMeta: (version: string) => `${p}meta:{${version}}:shadow`,
    /** HASH user field -> next offset, bucket `bucket` of the version (R22), its own hash tag to spread claims. */
    offset: (version: string, bucket: number) => `${p}offset:{${version}:${bucket}}`,
    /** LIST of scores, one per queue position: the score the build used (explain). */
    scores: (version: string) => `${p}scores:{${version}}`,
    /** HASH length, generatedAt, startOffset, counts, block summary. */
    meta: (version: string) => `${p}meta:{${version}}`,
    /** STRING owner token with expiry. */
    buildLock: (version: string) => `${p}build-lock:{${version}}`,
    /** STRING owner token with expiry: a shadow build's lock of its own (R21: a shadow never blocks the live build). */
    shadowBuildLock: (version: string) => `${p}build-lock:{${version}}:shadow`,
    /** HASH device digest -> guest record (lua/guest-record.lua, V1), bucketed like offsets (R22): a field, not keys (issue 52). */
    guests: (bucket: number) => `${p}guests:{${bucket}}`,
    /** rate-limiter-flexible's key prefix: new guest device ids per client address (R23, issue 52). */
    newDevices: `${p}new-devices`,
    /** STRING of 4-byte fingerprints of a signed-in user's recent views, oldest first (V1); a guest's are in `guests`. */
    views: (user: string) => `${p}views:{${user}}`,
    /** STRING of 4-byte fingerprints of the user's "not interested" marks, oldest first (V3). */
    notInterested: (user: string) => `${p}not-interested:{${user}}`,
    /** SET of video ids the user watched on one business day (R15 free-watch counting). */
    watches: (user: string, day: string) => `${p}watches:{${user}}:${day}`,
    /** SET of eligible ids for the legacy random feed (R17); name kept from the old service. */
    legacyIds: `${prefix}short-videos-all-ids-list`,
    /** One build's refill of the legacy set; the hash tag is the legacy key's whole name, so both share a slot and RENAME works. */
    legacyIdsStaging: (build: string) => `{${prefix}short-videos-all-ids-list}:staging:${build}`,
    /** Prefix for BullMQ's keys; the braces keep each queue's keys in one cluster slot. */
    bullPrefix: `${prefix}{bull}`,
  };
}

export type RedisKeys = ReturnType<typeof createRedisKeys>;

/** A version's live keys (what the API serves) or its shadow build's own keys (R20). */
export type LiveOrShadow = 'live' | 'shadow';

/** The queue, scores and meta keys of `version` (live or shadow, `which`). */
export function liveOrShadowKeys(keys: RedisKeys, version: string, which: LiveOrShadow): { queue: string; scores: string; meta: string } {
  return which === 'shadow'
    ? { queue: keys.shadowQueue(version), scores: keys.shadowScores(version), meta: keys.shadowMeta(version) }
    : { queue: keys.queue(version), scores: keys.scores(version), meta: keys.meta(version) };
}
