/**
 * Group `counters` (R3): a burst of distinct users on one video, the API killed with SIGKILL
 * three times in the middle of it and restarted, then every request retried, the worker's
 * repair job beside: each counter grows by exactly the number of users. --quick: likes only.
 */
import { COUNTER_KINDS as COUNTER_FIELDS, type CounterKind } from '@feed/storage';
import { waitUntil } from '../support/processes';
import { expect, type Suite } from './suite';

/** The crash burst (issue 26): distinct users on one video. */
const BURST_USERS = 1_500;
const BURST_CONCURRENCY = 40;
/** Each kind on a video of its own, away from the videos other checks read. */
const BURST_VIDEO_OFFSET: Record<CounterKind, number> = { likes: 101, collects: 102, comments: 103, shares: 104 };

/** One like, collect, comment (with an Idempotency-Key per user, so a retry is the same comment) or share; true when answered 2xx. */
async function interact(suite: Suite, kind: CounterKind, user: number, vid: string): Promise<boolean> {
  const headers: Record<string, string> = { Authorization: `Bearer ${suite.token(`burst-${kind}-${user}`)}`, 'Content-Type': 'application/json' };
  const request = {
    likes: { path: '/api/app/vid/like', body: { vid } },
    collects: { path: '/api/app/vid/collect', body: { vid } },
    comments: { path: '/api/app/vid/comment', body: { vid, content: `comment ${user}` } },
    shares: { path: '/api/app/share/output', body: { videoID: vid } },
  }[kind];
  if (kind === 'comments') headers['Idempotency-Key'] = `burst-comment-${user}`;
  const res = await fetch(`${suite.api}${request.path}`, { method: 'POST', headers, body: JSON.stringify(request.body) });
  await res.arrayBuffer();
  return res.ok;
}

export async function counterChecks(suite: Suite): Promise<void> {
  const { check, queue } = suite;
  const quick = suite.options.quick;
  for (const kind of quick ? (['likes'] as const) : (Object.keys(COUNTER_FIELDS) as CounterKind[])) {
    await check('counters', `${BURST_USERS} users, one video, API killed 3x mid-burst: ${kind} counted exactly once`, async () => {
      const vid = queue[BURST_VIDEO_OFFSET[kind]];
      const fields = COUNTER_FIELDS[kind];
      const counters = () => suite.counters(vid, kind);
      const before = await counters();
      const send = (user: number) => interact(suite, kind, user, vid);
      let answered = 0;
      let failed = 0;
      const kills = [0.2, 0.45, 0.7].map((share) => Math.round(share * BURST_USERS));
      let restarting: Promise<void> | undefined;
      const killAndRestart = async () => {
        await suite.apiProcess!.stop('SIGKILL');
        suite.apiProcess = await suite.startApi();
      };
      let next = 0;
      await Promise.all(
        Array.from({ length: BURST_CONCURRENCY }, async () => {
          while (next < BURST_USERS) {
            const user = next++;
            if (restarting) await restarting;
            const ok = await send(user).catch(() => false);
            if (ok) answered++;
            else failed++;
            if (kills.length && answered + failed >= kills[0] && !restarting) {
              kills.shift();
              restarting = killAndRestart().finally(() => (restarting = undefined));
            }
          }
        }),
      );
      if (restarting) await restarting;
      expect(kills.length === 0, `the burst ended before all three kills (${kills.length} left)`);
      // Every request again, as clients retry what they are not sure of; each must succeed.
      let retriesRefused = 0;
      for (let start = 0; start < BURST_USERS; start += BURST_CONCURRENCY) {
        const batch = Array.from({ length: Math.min(BURST_CONCURRENCY, BURST_USERS - start) }, (_, i) => start + i);
        retriesRefused += (await Promise.all(batch.map((user) => send(user).catch(() => false)))).filter((ok) => !ok).length;
      }
      expect(retriesRefused === 0, `${retriesRefused} retries were not answered 2xx`);
      const want = { recommend: before.recommend + BURST_USERS, display: before.display + BURST_USERS };
      const started = Date.now();
      // The retries complete their own records; the repair job (every 60 s) what else a kill left.
      await waitUntil(`${kind} counters to reach +${BURST_USERS}`, async () => JSON.stringify(await counters()) === JSON.stringify(want), 150_000).catch(() => undefined);
      const after = await counters();
      expect(
        after.recommend === want.recommend && after.display === want.display,
        `${fields.recommend} grew by ${after.recommend - before.recommend}, ${fields.display} by ${after.display - before.display} (want ${BURST_USERS} each)`,
      );
      return `${failed} requests cut by the kills; +${BURST_USERS} ${fields.recommend} and ${fields.display}, ${((Date.now() - started) / 1000).toFixed(1)} s after the retries`;
    });
  }
}
