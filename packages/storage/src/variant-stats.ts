/**
 * The V2 vs legacy readout's tally (SPEC D7): pages and engagement per variant in one hash per UTC
 * hour, added to in batches by every API instance, summed over 24 hours by the inspector.
 */
import { emptyReadout, READOUT_CLIENT_HOURLY_CAP, type StepReadout, type VariantCounts } from '@feed/domain';
import { runScript } from './lua-scripts';
import { NotDurableError, type Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

/** The feed a user's rollout bucket gives them (R16): the ring queue, or the old random feed. */
export const VARIANTS = ['ring', 'legacy'] as const;
export type Variant = (typeof VARIANTS)[number];

/** What is counted per variant: pages served, and the engagement they led to. */
export const VARIANT_EVENTS = ['page', 'view', 'like', 'collect', 'comment', 'share', 'not-interested'] as const;
export type VariantEvent = (typeof VARIANT_EVENTS)[number];

export type VariantTally = Record<Variant, Record<VariantEvent, number>>;

/** Feed health per variant for the ramp's guards (R23): requests, 5xx, fallback-served (R17), empty pages. */
export const VARIANT_HEALTH_EVENTS = ['request', 'server-error', 'degraded', 'empty-page'] as const;
export type VariantHealthEvent = (typeof VARIANT_HEALTH_EVENTS)[number];

/** Per variant and hour: the clients whose views were counted (their first counted view of the hour), the sample behind the views. */
export const VIEWERS = 'viewers';

/** Hourly hashes outlive the 24 h the readout sums. */
const HOUR_KEY_TTL_S = 48 * 3600;
const HOUR_MS = 3_600_000;

/** The hour an instant falls in, UTC: YYYYMMDDHH. */
export function statsHour(at: Date): string {
  return at.toISOString().slice(0, 13).replace(/[-T]/g, '');
}

/** The readout's two writes bound to one client: what the API's VariantReadout holds instead of the client. */
export const readoutStore = (redis: Redis, keys: RedisKeys) => ({
  admit: (client: string, at: Date, variant: Variant, event: VariantEvent, vid?: string) => admitReadoutAction(redis, keys, client, at, variant, event, vid),
  add: (at: Date, counts: Map<string, number>) => addVariantStats(redis, keys, at, counts),
});
export type ReadoutStore = ReturnType<typeof readoutStore>;

/** Counts `addVariantStats` did not write: `left` are those whose increment may not have run (to try again); the others ran. */
export class VariantStatsNotWritten extends Error {
  constructor(message: string, readonly left: Map<string, number>) {
    super(message);
  }
}

/**
 * Adds `counts` to the hour of `at`. VariantStatsNotWritten holds the increments that did not run;
 * one that ran unconfirmed (NotDurableError) is left out, or every flush would re-add it.
 */
export async function addVariantStats(redis: Redis, keys: RedisKeys, at: Date, counts: Map<string, number>): Promise<void> {
  if (counts.size === 0) return;
  const key = keys.variantStats(statsHour(at));
  const entries = [...counts];
  const results = await Promise.allSettled(entries.map(([field, n]) => redis.hIncrBy(key, field, n)));
  await redis.expire(key, HOUR_KEY_TTL_S).catch(() => undefined); // the next flush sets it again
  const ran = (result: PromiseSettledResult<unknown>) => result.status === 'fulfilled' || (result.reason instanceof NotDurableError && result.reason.written !== undefined);
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw new VariantStatsNotWritten(`variant stats not written: ${failed.reason instanceof Error ? failed.reason.message : String(failed.reason)}`, new Map(entries.filter((_, i) => !ran(results[i]))));
}

export const variantField = (variant: Variant, event: VariantEvent | VariantHealthEvent | typeof VIEWERS) => `${variant}:${event}`;
/** Per variant and hour, the clients' first counted view of the hour under a rollout of `percent`: the sample-ratio check's units (R23). */
export const unitsField = (variant: Variant, percent: number) => `${variant}:units:${percent}`;
/** An action of a guest device first seen in the hour `firstSeen` (YYYYMMDDHH), beside its count in `variantField`: the judge leaves out devices new to a step. */
export const freshField = (variant: Variant, event: VariantEvent, firstSeen: string) => `${variant}:${event}:new@${firstSeen}`;
const FRESH_FIELD = /^(ring|legacy):([a-z-]+):new@(\d{10})$/;
/** Any guest device's action, beside its count in `variantField`: the judge also reads signed-in users alone. */
export const guestField = (variant: Variant, event: VariantEvent) => `${variant}:${event}:guest`;

const DAY_MS = 24 * HOUR_MS;
/** A client's readout hash lives three days: the two before today are read for first successes (lua/readout-admit.lua). */
const CLIENT_DAY_TTL_S = 3 * 24 * 3600 + 3600;

/**
 * Whether the readout counts one action (D7, lua/readout-admit.lua): not a repeat of `event` on
 * `vid` within 48 h (`vid` undefined: a known first success), nor past READOUT_CLIENT_HOURLY_CAP
 * an hour. Reply: 0 repeat, -1 over the cap, 1 counted and first of the hour, 2 counted.
 */
export async function admitReadoutAction(redis: Redis, keys: RedisKeys, client: string, at: Date, variant: Variant, event: VariantEvent, vid?: string): Promise<number> {
  const day = (back: number) => keys.readoutClient(client, statsHour(new Date(at.getTime() - back * DAY_MS)).slice(0, 8));
  const first = vid === undefined ? '' : `${variant}:${event}:${vid}`;
  try {
    return await runScript<number>(redis, 'readout-admit', [day(0), day(1), day(2)], [first, `${statsHour(at).slice(8)}:${variant}:${event}`, String(READOUT_CLIENT_HOURLY_CAP), String(CLIENT_DAY_TTL_S)]);
  } catch (err) {
    // Ran but no replica confirmed it (behind Sentinels): the admission is stored, so a retry would be a repeat; its answer stands.
    if (err instanceof NotDurableError && err.written) return Number(err.written.reply);
    throw err;
  }
}

/** The hashes of the `hours` UTC hours up to `now` (the current, partial hour included). */
const hourHashes = (redis: Redis, keys: RedisKeys, now: Date, hours: number) =>
  Promise.all(Array.from({ length: hours }, (_, i) => redis.hGetAll(keys.variantStats(statsHour(new Date(now.getTime() - i * HOUR_MS))))));

/** Which field of the hourly hash each count of a ramp step's readout sums. */
const STEP_FIELDS: Record<keyof VariantCounts, VariantEvent | VariantHealthEvent> = {
  requests: 'request',
  serverErrors: 'server-error',
  degradations: 'degraded',
  emptyPages: 'empty-page',
  views: 'view',
  likes: 'like',
  collects: 'collect',
  shares: 'share',
  notInterested: 'not-interested',
};

const COUNT_OF = Object.fromEntries(Object.entries(STEP_FIELDS).map(([count, event]) => [event, count])) as Record<string, keyof VariantCounts>;

/** A step's readout (R23, D7) over `hours`, less guest devices new since its start (`fresh`), with `units` and `users`. */
export async function readStepReadout(redis: Redis, keys: RedisKeys, now: Date, hours: number, step?: { startedAt: Date; percent: number }): Promise<StepReadout> {
  const readout = emptyReadout();
  const [viewers, units] = [{ ring: 0, legacy: 0 }, { ring: 0, legacy: 0 }];
  const fresh = { ring: { views: 0, notInterested: 0 }, legacy: { views: 0, notInterested: 0 } };
  const users = emptyReadout();
  for (const hash of await hourHashes(redis, keys, now, hours)) {
    for (const variant of VARIANTS) {
      for (const [count, event] of Object.entries(STEP_FIELDS) as Array<[keyof VariantCounts, string]>) {
        readout[variant][count] += Number(hash[`${variant}:${event}`] ?? 0);
        users[variant][count] += Number(hash[`${variant}:${event}`] ?? 0) - Number(hash[`${variant}:${event}:guest`] ?? 0);
      }
      viewers[variant] += Number(hash[variantField(variant, VIEWERS)] ?? 0);
      if (step) units[variant] += Number(hash[unitsField(variant, step.percent)] ?? 0);
    }
    for (const [field, n] of step ? Object.entries(hash) : []) {
      const [, variant, event, firstSeen] = FRESH_FIELD.exec(field) ?? [];
      const count = COUNT_OF[event];
      if (!count || firstSeen < statsHour(step!.startedAt)) continue;
      readout[variant as Variant][count] -= Number(n);
      if (count === 'views' || count === 'notInterested') fresh[variant as Variant][count] += Number(n);
    }
  }
  return { ...readout, viewers, ...(step ? { units, fresh, users: { ring: users.ring, legacy: users.legacy } } : {}) };
}

/** The sums over the `hours` hours up to `now` (the current, partial hour included). */
export async function readVariantStats(redis: Redis, keys: RedisKeys, now: Date, hours = 24): Promise<VariantTally> {
  const tally = Object.fromEntries(VARIANTS.map((v) => [v, Object.fromEntries(VARIANT_EVENTS.map((e) => [e, 0]))])) as VariantTally;
  for (const hash of await hourHashes(redis, keys, now, hours)) {
    for (const variant of VARIANTS) for (const event of VARIANT_EVENTS) tally[variant][event] += Number(hash[variantField(variant, event)] ?? 0);
  }
  return tally;
}

const ratio = (n: number, d: number, scale = 1) => (d > 0 ? Math.round((n / d) * scale * 100) / 100 : null);

/** The inspector's side-by-side rows: views per page, and each engagement per 100 views. */
export function variantReadout(tally: VariantTally) {
  return VARIANTS.map((variant) => {
    const t = tally[variant];
    return {
      variant,
      pages: t.page,
      views: t.view,
      viewsPerPage: ratio(t.view, t.page),
      likesPer100Views: ratio(t.like, t.view, 100),
      notInterestedPer100Views: ratio(t['not-interested'], t.view, 100),
      collectsPer100Views: ratio(t.collect, t.view, 100),
      commentsPer100Views: ratio(t.comment, t.view, 100),
      sharesPer100Views: ratio(t.share, t.view, 100),
    };
  });
}
