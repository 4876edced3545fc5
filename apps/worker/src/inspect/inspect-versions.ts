/** What `pnpm cli inspect` and the inspector page show: versions, meta, blocks, and a shadow's diff from current (R20). */
import type { Queue } from 'bullmq';
import { Types } from 'mongoose';
import type { Config } from '@feed/config';
import { countDuplicates, expandBlocks, fullBlockRatio, numericValue } from '@feed/domain';
import { CHECK_EVERY_MS } from '../controller/desired-state';
import { SCHEDULER_ID } from '../jobs/build-queue';
import { rampView } from './inspect-ramp';
import { resolveRollout, variantReadout, type AuditTrail, type BuildStore, type LiveOrShadow, type RolloutStore, type VideoModel } from '@feed/storage';

export type Pointers = Awaited<ReturnType<BuildStore['pointers']>>;

/** One version's report (a shadow has no offsets); `fullBlockRatio`: exact 17+3 blocks over all; `compositions`: "17+3" -> 10. */
export async function reportVersion(store: BuildStore, version: string, pointers: Pointers, which: LiveOrShadow = 'live') {
  const { versions } = store;
  const [meta, completeness, { length: queueLength, ttlSeconds }] = await Promise.all([versions.readMeta(version, which), versions.completeness(version, which), versions.queueState(version, which)]);
  const usersWithOffset = which === 'shadow' || !meta ? 0 : await store.usersWithOffset(version, meta.offsetBuckets);
  const blocks = meta ? expandBlocks(meta.blocks) : [];
  const compositions: Record<string, number> = {};
  for (const b of blocks) compositions[`${b.high}+${b.fresh}`] = (compositions[`${b.high}+${b.fresh}`] ?? 0) + 1;
  const role = which === 'shadow' ? (['shadow'] as const) : (['current', 'previous'] as const).filter((r) => pointers[r] === version);
  const complete = completeness.complete ? { complete: true } : { complete: false, problem: completeness.problem };
  return { version, role: [...role], meta, ...complete, queueLength, ttlSeconds, usersWithOffset, fullBlockRatio: fullBlockRatio(blocks), compositions };
}

/** How `other`'s queue (live, or its shadow build's) differs from `base`'s live queue. */
export async function diffVersions({ versions }: BuildStore, base: string, other: string, otherWhich: LiveOrShadow = 'live') {
  const [a, b] = await Promise.all([versions.readQueue(base), versions.readQueue(other, otherWhich)]);
  const inA = new Set(a);
  const both = b.filter((id) => inA.has(id)).length;
  const inB = new Set(b);
  return {
    base,
    other,
    baseLength: a.length,
    otherLength: b.length,
    /** Ids in both queues, over the larger queue's length. */
    overlap: Math.max(a.length, b.length) ? both / Math.max(a.length, b.length) : 1,
    onlyInBase: a.filter((id) => !inB.has(id)).length,
    onlyInOther: b.length - both,
    duplicatesInOther: countDuplicates(b),
  };
}

/** The held version (R23) beside current, each compared figure and how to promote it; null when none. */
export async function heldReport(store: BuildStore) {
  const held = await store.heldVersion();
  if (!held) return null;
  const { version } = held;
  return {
    ...held,
    promote: { command: `pnpm cli build --promote ${version}`, endpoint: `POST /admin/inspector/api/held/${version}/promote`, dashboardJob: `add a job named promote-held with data {"promote": "${version}"}` },
  };
}

/** `versions` (default: all in Redis), the held one (R23), the last shadow and its diff from current. */
export async function summarizeVersions(store: BuildStore, versions?: string[]) {
  const pointers = await store.pointers();
  const listed = versions ?? (await store.versions.listVersions());
  const [reports, shadow, shadowDiff, held] = await Promise.all([
    Promise.all(listed.map((v) => reportVersion(store, v, pointers))),
    pointers.shadow ? reportVersion(store, pointers.shadow, pointers, 'shadow') : null,
    pointers.shadow && pointers.current ? diffVersions(store, pointers.current, pointers.shadow, 'shadow') : null,
    heldReport(store),
  ]);
  return { pointers, held, versions: reports, shadow: shadow?.meta ? shadow : null, shadowDiff: shadow?.meta ? shadowDiff : null };
}

/** Scores are sampled from the head of the queue: what users see first, bounded work. */
const SCORE_SAMPLE = 2000;
const SCORE_BUCKETS = 12;

/** Odd scores named in the summary; the rest are only counted. */
const ODD_NAMED = 5;

/** The written-back recommendScore of the first queued videos, in equal-width buckets; odd values counted apart. */
async function scoreHistogram(store: BuildStore, videos: VideoModel, version: string) {
  const ids = await store.versions.readQueue(version, 'live', 0, SCORE_SAMPLE - 1);
  const docs = await videos.collection
    .find<{ _id: unknown; recommendScore?: unknown }>({ _id: { $in: ids.map((id) => new Types.ObjectId(id)) } }, { projection: { recommendScore: 1 } })
    .toArray();
  const scores: number[] = [];
  const odd: string[] = [];
  for (const doc of docs) {
    const score = doc.recommendScore === undefined ? 0 : numericValue(doc.recommendScore);
    if (score === null) odd.push(String(doc._id));
    else scores.push(score);
  }
  const width = Math.ceil((scores.reduce((a, b) => Math.max(a, b), 1) + 1) / SCORE_BUCKETS);
  const buckets = Array.from({ length: SCORE_BUCKETS }, (_, i) => ({ from: i * width, to: (i + 1) * width - 1, count: 0 }));
  for (const score of scores) buckets[Math.min(SCORE_BUCKETS - 1, Math.max(0, Math.floor(score / width)))].count++;
  // `odd`: sampled videos whose stored recommendScore is no finite number (a string, NaN, Infinity): shown, never bucketed (R1a).
  return { sampled: docs.length, buckets, odd: { count: odd.length, ids: odd.slice(0, ODD_NAMED) } };
}

/** The schedule as BullMQ holds it: `nextBuildAt` (UTC and local), `error` (no scheduler, repairs stopped, R21), `lastRepair`. */
export async function buildSchedule(queue: Pick<Queue, 'getJobScheduler'>, store: BuildStore, timeZone: string) {
  const [scheduler, repair, stopped] = await Promise.all([queue.getJobScheduler(SCHEDULER_ID), store.lastRepair(), store.stoppedDetail()]);
  // R21: a repair that does not converge is stopped, and said here until the state changes.
  const repairError = stopped ? `repair stopped: ${stopped}` : undefined;
  if (!scheduler?.next) {
    const missing = `the daily job scheduler ${SCHEDULER_ID} is missing: no build is scheduled (the controller upserts it within ${CHECK_EVERY_MS / 1000} s)`;
    return { nextBuildAt: null, nextBuildAtLocal: null, error: [missing, repairError].filter(Boolean).join('; '), lastRepair: repair };
  }
  const next = new Date(scheduler.next);
  const local = new Intl.DateTimeFormat('sv-SE', { timeZone, dateStyle: 'short', timeStyle: 'medium' }).format(next);
  return { nextBuildAt: next.toISOString(), nextBuildAtLocal: `${local} ${timeZone}`, ...(repairError ? { error: repairError } : {}), lastRepair: repair };
}

export interface InspectorDeps {
  config: Pick<Config, 'shortRecommendV2Enabled' | 'shortRecommendV2Percent' | 'businessTimeZone'>;
  /** The build queue: its job scheduler says when the next build runs. */
  queue: Pick<Queue, 'getJobScheduler'>;
  store: BuildStore;
  rollout: RolloutStore;
  videos: VideoModel;
  /** On-call's trail, in MongoDB (D6). */
  audit: AuditTrail;
}

/** Audit entries the page shows (the stream keeps many more; `pnpm cli rollout --history` reads them too). */
const AUDIT_SHOWN = 50;

/** The inspector page: a week's versions, shadow, scores, rollout, next build, V2 readout (D7), ramp (R23), audit (D6). */
export async function inspectorSummary({ config, queue, store, rollout, videos, audit: trail }: InspectorDeps) {
  const summary = await summarizeVersions(store, (await store.versions.listVersions()).slice(0, 7));
  const focus = summary.pointers.current ?? summary.versions[0]?.version;
  const [scores, override, schedule, tally, audit, ramp] = await Promise.all([
    focus ? scoreHistogram(store, videos, focus) : undefined,
    rollout.override(),
    buildSchedule(queue, store, config.businessTimeZone),
    rollout.variantStats(new Date()),
    trail.read(AUDIT_SHOWN),
    rampView(rollout),
  ]);
  return {
    ...summary,
    scores: scores ? { version: focus, ...scores } : null,
    rollout: resolveRollout({ enabled: config.shortRecommendV2Enabled, percent: config.shortRecommendV2Percent }, override),
    schedule,
    readout: variantReadout(tally),
    ramp,
    audit,
  };
}
