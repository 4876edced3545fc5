/** Group `faults`: Redis down or restarted mid-build, a worker killed mid-build, two workers on one version, MongoDB down (last: it stays down). */
import type { BuildResult } from '@feed/worker';
import { cli, CLI_TIMEOUT_MS, exitWithin, freePort, startProcess, tsx, waitUntil } from '../support/processes';
import { expect, type Suite } from './suite';

export async function faultChecks(suite: Suite): Promise<void> {
  const { api, businessDay, check, current, env, keys, offsetOf, redisClient, summary, token } = suite;
  let dataLost = 0;
  await check('faults', 'Redis unavailable during reads: the degradation chain answers and is counted', async () => {
    await suite.redis.stop();
    const res = await fetch(`${api}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token('during-outage')}` } });
    expect(res.status === 200, `feed answered ${res.status} with Redis down`);
    const body = (await res.json()) as { queueVersion: string; vInfos: unknown[] };
    expect(body.queueVersion === 'fallback' && body.vInfos.length === 20, `unexpected degraded page ${JSON.stringify(body).slice(0, 120)}`);
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(/feed_degradations_total\{kind="mongo-fallback"\} [1-9]/.test(metrics), 'mongo-fallback degradation not counted');
    // Still ready: without Redis the instance serves MongoDB pages (R17), so it stays in the Service.
    const ready = await fetch(`${api}/readyz`);
    const readiness = (await ready.json()) as { status: string; redis: string };
    expect(ready.status === 200 && readiness.status === 'degraded' && readiness.redis === 'down', `/readyz answered ${ready.status} ${JSON.stringify(readiness)} with Redis down`);
    suite.redis = await suite.restartRedis();
    await waitUntil('ring serving again', async () => {
      const again = (await (await fetch(`${api}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token('after-outage')}` } })).json()) as { queueVersion: string };
      return again.queueVersion === current;
    });
    return 'fallback page served; ring back after restart';
  });

  await check('faults', 'Redis restarted in the middle of a build: the old version serves during the build, a fallback page while Redis is down, the next attempt succeeds, nothing lost', async () => {
    // Users who read the current version before the restart: their offsets must survive it.
    const readers = Array.from({ length: 50 }, (_, i) => `u:before-restart-${i}`);
    for (const user of readers) await fetch(`${api}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token(user.slice(2))}` } });
    const offsetsBefore = await Promise.all(readers.map((user) => offsetOf(current, user)));
    expect(offsetsBefore.every((offset) => offset === '20'), `readers' offsets before the restart: ${offsetsBefore.join(',')}`);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    // A later day becomes current only when asked (--switch): this build is meant to publish.
    const build = startProcess(tsx('tools/cli.ts', 'build', '--at', tomorrow, '--switch'), env);
    await waitUntil('the build to hold its lock', async () => (await redisClient.exists(keys.buildLock(businessDay(tomorrow)))) === 1);
    const page = async (user: string) => {
      const res = await fetch(`${api}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token(user)}` } });
      return { status: res.status, version: ((await res.json()) as { queueVersion?: string }).queueVersion };
    };
    const whileBuilding = await page('mid-build');
    expect(whileBuilding.status === 200 && whileBuilding.version === current, `during the build: ${JSON.stringify(whileBuilding)}, not a page of ${current}`);
    await suite.redis.stop();
    // While Redis is down and the build is stuck, the API still answers, from MongoDB.
    const during = await page('redis-down-mid-build');
    expect(during.status === 200 && during.version === 'fallback', `with Redis down: ${JSON.stringify(during)}, not a fallback page`);
    suite.redis = await suite.restartRedis();
    const code = await exitWithin(build, 'the build under the Redis outage', CLI_TIMEOUT_MS);
    const now = await redisClient.get(keys.current);
    expect(now === current || code === 0, `current moved to ${now} although the build failed`);
    if (now) expect((await redisClient.lLen(keys.queue(now))) === Number(await redisClient.hGet(keys.meta(now), 'length')), 'current version is half-written');
    const retry = await cli(env, 'build', '--at', tomorrow, '--switch');
    expect(retry.code === 0 && /"status": "(built|already-current)"/.test(retry.output), `retry failed: ${retry.output.slice(-300)}`);
    const offsetsAfter = await Promise.all(readers.map((user) => offsetOf(current, user)));
    dataLost += offsetsBefore.filter((offset, i) => offsetsAfter[i] !== offset).length;
    expect(dataLost === 0, `${dataLost} offsets lost across the Redis restart`);
    return `first attempt exit ${code}; retry built; ${readers.length} offsets kept`;
  });

  // Builds through the worker deployable, as the dashboard's "Add job" queues them.
  const buildQueue = suite.buildQueue();
  const finished = async (jobId: string, timeoutMs: number) => {
    await waitUntil(`job ${jobId} finished`, async () => Boolean((await buildQueue.getJob(jobId))?.finishedOn), timeoutMs);
    return (await buildQueue.getJob(jobId))!;
  };

  await check('faults', 'worker deployable killed (SIGKILL) mid-build: no half-written version becomes current, the lock expires, the job is run again and succeeds', async () => {
    const before = await redisClient.get(keys.current);
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const version = businessDay(day);
    await buildQueue.add('manual', { at: day, switch: true }, { jobId: 'killed-mid-build' });
    // The lock is held from the first step to the last: the build is under way.
    await waitUntil('the build to hold its lock', async () => (await redisClient.exists(keys.buildLock(version))) === 1);
    await suite.workerProcess!.stop('SIGKILL');
    expect((await redisClient.get(keys.current)) === before, 'current moved after the kill');
    expect((await redisClient.exists(keys.buildLock(version))) === 1, 'the killed build left no lock behind');
    await waitUntil('lock expiry', async () => (await redisClient.exists(keys.buildLock(version))) === 0, 10_000);
    suite.workerProcess = await suite.startWorker();
    // BullMQ hands the killed worker's job to the new one once its job lock stalls (~30 s).
    const job = await finished('killed-mid-build', 120_000);
    expect((job.returnvalue as BuildResult | undefined)?.status === 'built', `the job ended ${job.failedReason ?? JSON.stringify(job.returnvalue)}`);
    const now = (await redisClient.get(keys.current))!;
    expect(now === version, `current is ${now}, not the rebuilt ${version}`);
    expect((await redisClient.lLen(keys.queue(now))) === Number(await redisClient.hGet(keys.meta(now), 'length')), 'new current is half-written');
    return `lock expired; the job ran again on the new worker and published ${now}`;
  });

  await check('faults', 'two worker deployables, two builds of one version: exactly one builds, the other waits for its lock and finds it built', async () => {
    const second = await suite.startWorker(await freePort());
    try {
      const day = new Date(Date.now() + 3 * 86_400_000).toISOString();
      await buildQueue.add('manual', { at: day, switch: true }, { jobId: 'race-a' });
      await waitUntil('the first build to hold its lock', async () => (await redisClient.exists(keys.buildLock(businessDay(day)))) === 1);
      // The worker running the first build takes one job at a time: the other worker takes this one.
      await buildQueue.add('manual', { at: day, switch: true }, { jobId: 'race-b' });
      const statuses = await Promise.all(['race-a', 'race-b'].map(async (id) => ((await finished(id, 60_000)).returnvalue as BuildResult).status));
      expect(statuses[0] === 'built' && statuses[1] === 'already-current', `statuses ${statuses.join(', ')}`);
      return 'one built, one waited for the lock and found the version built';
    } finally {
      await second.stop();
    }
  });
  summary.dataLost = String(dataLost);
}

/** Run last: MongoDB is not started again. */
export async function mongoFaultChecks(suite: Suite): Promise<void> {
  const { api, check, token } = suite;
  await check('faults', 'MongoDB unavailable during reads: a clear 503', async () => {
    await suite.mongoServer.stop();
    // Once the video cache (VIDEO_CACHE_MS) has lapsed, a read needs MongoDB: wait for that, bounded.
    // The last answer is the one checked below (waitUntil reads at least once, or throws).
    let res!: Response;
    const read = async () => (res = await fetch(`${api}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token('no-mongo')}` } }));
    await waitUntil('a read to need MongoDB', async () => (await read()).status !== 200, 5_000);
    const body = (await res.json()) as { error?: { code: string } };
    expect(res.status === 503 && body.error?.code === 'unavailable', `answered ${res.status} ${JSON.stringify(body)}`);
    // Readiness acts on a store once it has failed every probe for 3 s (FAILING_AFTER_MS), so a
    // moment's slowness does not take the whole fleet out of rotation (docs/operations.md).
    await waitUntil('/readyz to report MongoDB down', async () => (await fetch(`${api}/readyz`)).status === 503, 10_000);
    return '503 unavailable; /readyz 503';
  });
}
