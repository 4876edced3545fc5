/**
 * Group `ramp` (R23): two ramps the worker drives by itself over a simulated readout (D7's hourly
 * hash fed every second with known rates, views split by the percent in force): one halted by a
 * lower like rate, one reaching 100 %; the audit trail names each step. The shortest dwell (1 min).
 * First, a ramp judged on real API traffic: 150 signed-in users pass its 50 % step while one guest
 * device sends 300 "not interested" for one video (D7: counted once; issue 43's attack).
 */
import { statsHour } from '@feed/storage';
import { cli, waitUntil } from '../support/processes';
import { expect, type Suite } from './suite';

export async function rampChecks(suite: Suite): Promise<void> {
  const { api, check, env, keys, redisClient, worker } = suite;
  const RAMP_RATES = { view: 1, like: 0.05, collect: 0.02, share: 0.01, 'not-interested': 0.03, request: 0.2, 'server-error': 0.0002, degraded: 0.0004, 'empty-page': 0.0002 };
  const feedReadout = (ringLikes: number) => {
    const timer = setInterval(() => {
      void (async () => {
        const [enabled, percent] = await redisClient.hmGet(keys.rollout, ['enabled', 'percent']);
        const share = enabled === 'false' ? 0 : Number(percent ?? 100) / 100;
        const key = keys.variantStats(statsHour(new Date()));
        for (const [variant, views] of [['ring', Math.round(20_000 * share)], ['legacy', Math.round(20_000 * (1 - share))]] as const) {
          for (const [event, rate] of Object.entries(RAMP_RATES)) await redisClient.hIncrBy(key, `${variant}:${event}`, Math.round(views * (variant === 'ring' && event === 'like' ? ringLikes : rate)));
        }
      })().catch(() => undefined);
    }, 1000);
    return () => clearInterval(timer);
  };
  const storedRamp = async () => JSON.parse((await redisClient.hGet(keys.ramp, 'state')) ?? 'null') as { id: string; status: string; lastGoodPercent: number; haltReasons: string[] } | null;
  const rampSteps = async (id: string) => {
    const history = await cli(env, 'rollout', '--history');
    return history.output.split('\n').filter((line) => line.includes(`ramp ${id} (worker)  ramp-step`)).reverse().map((line) => /"kind":"([^"]+)","percent":(\d+)/.exec(line)?.slice(1).join(' ')).join(', ');
  };
  const rollout = async () => redisClient.hGetAll(keys.rollout);
  /** Starts a ramp 5,100 % over a readout whose ring likes at `ringLikeRate`, until it is `until`; what it left. */
  const rampUntil = async (ringLikeRate: number, until: 'done' | 'halted') => {
    // This hour's readout also holds the real traffic of the checks before (swipes, few likes),
    // which would judge the ring on views without likes: the step is judged on the simulated rates alone.
    await redisClient.del(keys.variantStats(statsHour(new Date())));
    const stop = feedReadout(ringLikeRate);
    try {
      const started = await cli(env, 'rollout', '--ramp', '5,100', '--dwell', '1m');
      expect(started.code === 0, `ramp refused: ${started.output}`);
      await waitUntil(`the ramp ${until}`, async () => ['done', 'halted', 'paused'].includes((await storedRamp())?.status ?? ''), 180_000);
    } finally {
      stop();
    }
    const ramp = (await storedRamp())!;
    expect(ramp.status === until, `the ramp ended ${ramp.status}, not ${until}: ${ramp.haltReasons.join('; ')}`);
    const metrics = await (await fetch(`${worker}/metrics`)).text();
    return { ramp, inForce: await rollout(), haltedGauge: /^feed_ramp_halted (\d+)$/m.exec(metrics)?.[1], steps: await rampSteps(ramp.id) };
  };
  /** Runs `jobs` with at most `width` at once. */
  const inParallel = async (jobs: Array<() => Promise<unknown>>, width = 8) => {
    let next = 0;
    await Promise.all(Array.from({ length: width }, async () => {
      while (next < jobs.length) await jobs[next++]();
    }));
  };
  const post = async (path: string, headers: Record<string, string>, body: object) => {
    const res = await fetch(`${api}${path}`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status === 200, `POST ${path}: ${res.status} ${await res.text()}`);
  };
  // Not in --quick (as the kill checks, unless asked with --only ramp): in CI's quick run, after the
  // toggles burst, it timed out with the ramp neither done nor halted; the attack's fast replay is
  // apps/api/test/readout-first-success.test.ts, in the Jest suite.
  const attackReplay = !suite.options.quick || suite.options.only?.includes('ramp');
  if (attackReplay) await check('ramp', 'a ramp 50,100 % over 150 users\' real traffic and one guest device sending 300 "not interested" for one video: reaches 100 %', async () => {
    // The step's readout is its UTC hours: counts of earlier groups in them are not this traffic.
    await redisClient.del([0, 1, 2].map((h) => keys.variantStats(statsHour(new Date(Date.now() - h * 3600_000)))));
    const admin = { Authorization: `Basic ${Buffer.from(`admin:${suite.adminPassword}`).toString('base64')}`, 'Content-Type': 'application/json' };
    const started = await fetch(`${api}/api/admin/rollout/ramp`, { method: 'PUT', headers: admin, body: JSON.stringify({ steps: [50, 100], dwell: '1m', minViews: 1000, minRequests: 150 }) });
    expect(started.status === 200, `ramp refused: ${started.status} ${await started.text()}`);
    await waitUntil('the 50 % step in force', async () => (await rollout()).percent === '50' && (await storedRamp())?.status === 'running', 60_000);
    let guest = '';
    for (let i = 0; i < 40 && guest === ''; i++) {
      const device = `ramp-attacker-${i}`;
      const page = (await (await fetch(`${api}/api/app/recommend/vid/list`, { headers: { 'X-Device-Id': device } })).json()) as { queueVersion?: string };
      if (page.queueVersion !== 'legacy') guest = device;
    }
    expect(guest !== '', 'no guest device of 40 is served by the ring at 50 %');
    const users = Array.from({ length: 150 }, (_, u) => ({ Authorization: `Bearer ${suite.token(`ramp-user-${u}`)}` }));
    const vids = suite.queue.slice(0, 20);
    // Pages two at a time, before the engagement: eight at once beside the views degraded 9 % of the ring's pages on a loaded machine (a degradation verdict, not this check's subject).
    await inParallel(users.flatMap((user) => [0, 1, 2].map(() => async () => expect((await fetch(`${api}/api/app/recommend/vid/list`, { headers: user })).status === 200, 'a feed page failed'))), 2);
    await inParallel(users.flatMap((user, u) => [
      ...vids.map((vid) => () => post('/api/app/vid/view', user, { vid })),
      ...(u % 5 === 0 ? [() => post('/api/app/recommend/vid/not-interested', user, { vid: vids[u % vids.length] })] : []),
    ]));
    await inParallel(Array.from({ length: 300 }, () => () => post('/api/app/recommend/vid/not-interested', { 'X-Device-Id': guest }, { vid: vids[0] })));
    await waitUntil('the ramp done or halted', async () => ['done', 'halted'].includes((await storedRamp())?.status ?? ''), 240_000);
    const ramp = (await storedRamp())!;
    const steps = await rampSteps(ramp.id);
    expect(ramp.status === 'done', `ramp ${ramp.status}: ${ramp.haltReasons.join('; ')}`);
    expect(steps === 'started 50, step-started 50, step-passed 50, done 100', `audited steps: ${steps}`);
    expect((await cli(env, 'rollout', '--clear')).code === 0, 'rollout --clear failed');
    return `guest ${guest}: 300 marks of one video; audit: ${steps}`;
  });

  // The equal ramp first: the regression's counts stay in their UTC hour, which a later step's readout would include.
  await check('ramp', 'a ramp 5,100 % with equal variants: reaches 100 %, each step audited', async () => {
    const { inForce, haltedGauge, steps } = await rampUntil(RAMP_RATES.like, 'done');
    expect(inForce.percent === '100' && inForce.enabled === 'true', `rollout after the ramp: ${JSON.stringify(inForce)}`);
    expect(haltedGauge === '0', `feed_ramp_halted is ${haltedGauge} on the worker, not 0`);
    expect(steps === 'started 5, step-started 5, step-passed 5, done 100', `audited steps: ${steps}`);
    return `rollout ${JSON.stringify(inForce)}; audit: ${steps}`;
  });

  await check('ramp', 'a ramp 5,100 % whose ring likes 3 % vs 5 %: halted at 5 % back to 0 %, FeedRampHalted raised, each step audited', async () => {
    const { ramp, inForce, haltedGauge, steps } = await rampUntil(0.03, 'halted');
    expect(inForce.percent === '0', `percent after the halt: ${inForce.percent}`);
    expect(/^likes: /.test(ramp.haltReasons[0] ?? ''), `halt reasons: ${ramp.haltReasons.join('; ')}`);
    expect(haltedGauge === '1', `feed_ramp_halted is ${haltedGauge} on the worker, not 1`);
    expect(steps === 'started 5, step-started 5, halted 5', `audited steps: ${steps}`);
    expect((await cli(env, 'rollout', '--clear')).code === 0, 'rollout --clear failed');
    return `percent ${inForce.percent}; ${ramp.haltReasons[0]}; audit: ${steps}`;
  });
}
