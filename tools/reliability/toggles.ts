/**
 * Group `toggles` (R3, C): users double-tap like on one video (like and unlike at once, then
 * like, three times over), the API killed with SIGKILL half-way and restarted; then each user's
 * last action until answered (a like, and an unlike after it for every other user), the repair
 * job beside: no answer 5xx, recommendLikeCount = users who ever liked, likeCount = users whose
 * last action was a like. Then the model-based test with a long run.
 */
import { spawn } from 'node:child_process';
import { waitUntil } from '../support/processes';
import { expect, type Suite } from './suite';

/** The double-tap check (issue 33): users toggling like on one video, the video it uses. */
const TOGGLE_VIDEO_OFFSET = 105;

/** POST `path` {vid} as `user`; the status, 0 when no answer came (the API was killed). */
async function toggle(suite: Suite, path: string, user: string, vid: string): Promise<number> {
  try {
    const res = await fetch(`${suite.api}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${suite.token(user)}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ vid }) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Runs the model-based interaction test with `runs` runs in a Jest of its own; its output when it fails. */
function modelTest(runs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npx', ['jest', 'apps/api/test/interaction-model.test.ts'], {
      env: { ...process.env, MODEL_RUNS: String(runs), NODE_OPTIONS: '--conditions=@feed/source' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

export async function toggleChecks(suite: Suite): Promise<void> {
  const { check, queue } = suite;
  /** Runs of the model-based interaction test here (`pnpm test` runs 25). */
  const MODEL_RUNS = suite.options.quick ? 100 : 600;
  // 200 users' double taps on one video: their tallies' compare-and-set rounds outlast the budget on the
  // embedded MongoDB; a written tap is answered 2xx all the same (its tally deferred, R3).
  const TOGGLE_USERS = 200;
  await check('toggles', `${TOGGLE_USERS} users double-tap like/unlike on one video, API killed mid-way: no 5xx, counters exact`, async () => {
    const vid = queue[TOGGLE_VIDEO_OFFSET];
    const counters = () => suite.counters(vid, 'likes');
    const before = await counters();
    const users = Array.from({ length: TOGGLE_USERS }, (_, i) => `toggler-${i}`);
    const statuses: number[] = [];
    const tap = async (user: string, path: string) => statuses.push(await toggle(suite, path, user, vid));
    let killed = false;
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        users.map(async (user, i) => {
          await Promise.all([tap(user, '/api/app/vid/like'), tap(user, '/api/app/vid/unlike')]);
          await Promise.all([tap(user, '/api/app/vid/like'), tap(user, '/api/app/vid/like')]);
          if (round === 1 && i === TOGGLE_USERS / 2 && !killed) {
            killed = true;
            await suite.apiProcess!.stop('SIGKILL');
            // The other users' taps meanwhile get no answer (status 0) until it is ready again.
            suite.apiProcess = await suite.startApi();
          }
        }),
      );
    }
    const lastLikes = users.filter((_, i) => i % 2 === 0).length;
    for (const [i, user] of users.entries()) {
      const paths = i % 2 === 0 ? ['/api/app/vid/like'] : ['/api/app/vid/like', '/api/app/vid/unlike'];
      for (const path of paths) {
        let status = 0;
        for (let attempt = 0; attempt < 5 && (status < 200 || status >= 300); attempt++) statuses.push((status = await toggle(suite, path, user, vid)));
        expect(status >= 200 && status < 300, `${user}'s last ${path} not answered 2xx after 5 attempts (${status})`);
      }
    }
    const errors = statuses.filter((status) => status >= 500);
    expect(errors.length === 0, `${errors.length} answers 5xx (${[...new Set(errors)].join(', ')})`);
    const want = { recommend: before.recommend + TOGGLE_USERS, display: before.display + lastLikes };
    await waitUntil('like counters to settle', async () => JSON.stringify(await counters()) === JSON.stringify(want), 150_000).catch(() => undefined);
    const after = await counters();
    expect(
      after.recommend === want.recommend && after.display === want.display,
      `recommendLikeCount grew by ${after.recommend - before.recommend} (want ${TOGGLE_USERS}), likeCount by ${after.display - before.display} (want ${lastLikes})`,
    );
    return `${statuses.length} requests, ${statuses.filter((status) => status === 0).length} cut by the kill, 0 answered 5xx; +${TOGGLE_USERS} recommendLikeCount, +${lastLikes} likeCount`;
  });
  await check('toggles', `model-based interaction test, ${MODEL_RUNS} runs (seed printed)`, async () => {
    const { code, output } = await modelTest(MODEL_RUNS);
    const seed = /interaction model: seed (\d+)/.exec(output)?.[1];
    expect(code === 0, `failed (seed ${seed}):\n${output.slice(-4000)}`);
    return `seed ${seed}`;
  });
}
