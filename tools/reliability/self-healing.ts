/** Group `self-healing` (R21): the ring back by itself after a first start on an empty Redis, a FLUSHALL, the current queue deleted. */
import { SCHEDULER_ID } from '@feed/worker';
import { waitUntil } from '../support/processes';
import { RING_BACK_WITHIN_MS } from './build-kill';
import { expect, type Suite } from './suite';

/** Run first, as the deployables start: every later check needs the version it makes current. */
export async function firstStartChecks(suite: Suite): Promise<void> {
  await suite.check('self-healing', 'first start on an empty Redis, no build by hand: a ring page within 90 s', () => suite.untilRingPage(90_000));
  // Every later check needs the first version: with the self-healing checks left out, still wait for it.
  if (!suite.runs('self-healing')) await suite.untilRingPage(90_000);
}

export async function dataLossChecks(suite: Suite): Promise<void> {
  const { check, keys, pageVersion, redisClient, untilRingPage } = suite;
  await check('self-healing', 'Redis loses all its data (FLUSHALL): a ring page within R21\'s 2 minutes, the daily job scheduler back', async () => {
    await redisClient.flushAll();
    const healed = await untilRingPage(RING_BACK_WITHIN_MS);
    await waitUntil('the daily job scheduler upserted again', async () => Boolean(await suite.buildQueue().getJobScheduler(SCHEDULER_ID)), 30_000);
    return `${healed}; scheduler present`;
  });

  await check('self-healing', 'the current version\'s queue deleted: a ring page of that version within R21\'s 2 minutes', async () => {
    const version = (await redisClient.get(keys.current))!;
    expect((await redisClient.del(keys.queue(version))) === 1, `no queue of ${version} to delete`);
    const started = Date.now();
    await waitUntil(`a ring page of ${version}`, async () => (await pageVersion()) === version, RING_BACK_WITHIN_MS);
    return `ring page of ${version} after ${((Date.now() - started) / 1000).toFixed(1)} s`;
  });
}
