/**
 * The reliability suite's `held` group (SPEC R23, issue 38): against the running deployables, a
 * catalogue cut by 80 % (a bad migration takes most videos offline) makes the next day's build,
 * queued as the dashboard queues it, a held shadow: current keeps serving, the worker counts
 * `feed_builds_total{result="held"}` and `feed_version_held` 1, the inspector shows the held version with its figures, and
 * on-call's one action (the worker's admin endpoint) switches current, both on the audit trail.
 * The catalogue is restored afterwards, so the checks after this one read the whole of it.
 */
import { AUDIT_COLLECTION, videoModel } from '@feed/storage';
import { waitUntil } from '../support/processes';
import { expect, type Suite } from './suite';

/** The day after `version` (YYYYMMDD), as job data's `at` (read in TZ_BUSINESS): a later day than current. */
function dayAfter(version: string): string {
  const next = new Date(Date.UTC(Number(version.slice(0, 4)), Number(version.slice(4, 6)) - 1, Number(version.slice(6, 8)) + 1));
  return `${next.toISOString().slice(0, 10)}T12:00:00`;
}

async function heldReleaseScenario(suite: Suite): Promise<string> {
  const { adminPassword, keys, pageVersion, redisClient: redis, worker } = suite;
  const before = (await redis.get(keys.current))!;
  const conn = await suite.mongo();
  const queue = suite.buildQueue();
  const videos = videoModel(conn);
  const approved = (await videos.find({ status: 'approved' }).select({ _id: 1 }).lean()).map((d) => d._id);
  const cut = approved.slice(0, Math.ceil(approved.length * 0.8));
  const admin = `Basic ${Buffer.from(`admin:${adminPassword}`).toString('base64')}`;
  try {
    await videos.updateMany({ _id: { $in: cut } }, { $set: { status: 'offline' } });
    const at = dayAfter(before);
    const jobId = `held-${Date.now()}`;
    await queue.add('manual', { at, switch: true }, { jobId });
    await waitUntil(`job ${jobId} finished`, async () => Boolean((await queue.getJob(jobId))?.finishedOn), 120_000);
    const job = (await queue.getJob(jobId))!;
    const result = job.returnvalue as { version?: string; status?: string; reason?: string } | undefined;
    expect(result?.status === 'held', `the build of ${at} ended ${job.failedReason ?? JSON.stringify(result)}, not held`);
    const version = result.version!;
    expect((await redis.get(keys.current)) === before, `current moved to ${await redis.get(keys.current)} over a held build`);
    expect((await redis.get(keys.shadow)) === version, 'the held version is not the shadow');
    expect((await pageVersion()) === before, 'the API no longer serves the version before the held one');
    const metrics = await (await fetch(`${worker}/metrics`)).text();
    expect(/feed_builds_total\{result="held"\} 1\b/.test(metrics), 'feed_builds_total{result="held"} is not 1');
    expect(/^feed_version_held 1$/m.test(metrics), 'feed_version_held is not 1 while the version is held');

    const summary = (await (await fetch(`${worker}/admin/inspector/api/summary`, { headers: { Authorization: admin } })).json()) as { held?: { version: string; verdict: { compared: Array<{ figure: string; next: number; current: number | null }> } } };
    const length = summary.held?.verdict.compared.find((f) => f.figure === 'length');
    expect(summary.held?.version === version && length && length.current !== null && length.next < length.current / 2, `the inspector shows ${JSON.stringify(summary.held ?? null)}`);

    const unknown = await fetch(`${worker}/admin/inspector/api/held/19990101/promote`, { method: 'POST', headers: { Authorization: admin } });
    expect(unknown.status === 404, `promoting a version that is not held answered ${unknown.status}`);
    const promoted = await fetch(`${worker}/admin/inspector/api/held/${version}/promote`, { method: 'POST', headers: { Authorization: admin } });
    expect(promoted.status === 200, `the promote answered ${promoted.status} ${await promoted.text()}`);
    expect((await redis.get(keys.current)) === version, 'current did not switch to the promoted version');
    await waitUntil(`a ring page of ${version}`, async () => (await pageVersion()) === version, 15_000);
    expect(/^feed_version_held 0$/m.test(await (await fetch(`${worker}/metrics`)).text()), 'feed_version_held is not 0 after the promote');

    const trail = await conn.collection(AUDIT_COLLECTION).find({ action: { $in: ['build-held', 'build-promoted'] } }).sort({ at: 1 }).toArray();
    const actions = trail.map((e) => `${String(e.action)} by ${String(e.actor)} (${String(e.via)})`);
    expect(actions.join(', ') === 'build-held by release gate (worker), build-promoted by admin (api)', `the audit trail says ${actions.join(', ') || 'nothing'}`);
    return `${version} held (${length.next} vs ${length.current} positions: ${result.reason}), promoted by the admin endpoint; trail: ${actions.join(', ')}`;
  } finally {
    await videos.updateMany({ _id: { $in: cut } }, { $set: { status: 'approved' } });
  }
}

/** Near the end, as it leaves a later day current (the catalogue itself is restored). */
export async function heldChecks(suite: Suite): Promise<void> {
  await suite.check('held', 'a catalogue cut by 80 %: the next build is held as a shadow (current serves, counted, on the inspector), the admin endpoint promotes it, both on the audit trail', () =>
    heldReleaseScenario(suite),
  );
}
