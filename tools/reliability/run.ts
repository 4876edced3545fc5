/**
 * `pnpm test:reliability [--quick] [--only <groups>]`: the running API and worker exercised as a
 * client would, on 127.0.0.1 only, against a Redis of the suite's own and the embedded MongoDB,
 * each in its own process so they can be broken. Bounded in time and count; stops by itself.
 * Prints a summary table and exits non-zero when any check fails. Each group of checks is a file
 * beside this one; they run in the order below (later groups rely on what earlier ones leave).
 */
import { Command, InvalidArgumentError } from 'commander';
import { cli } from '../support/processes';
import { badInputChecks } from './bad-input';
import { killChecks } from './build-kill';
import { counterChecks } from './counters';
import { faultChecks, mongoFaultChecks } from './faults';
import { heldChecks } from './held-release';
import { loadChecks } from './load';
import { rampChecks } from './ramp';
import { accessChecks, secretsChecks } from './security';
import { dataLossChecks, firstStartChecks } from './self-healing';
import { createSuite, expect, GROUPS, report, type Group, type SuiteOptions } from './suite';
import { toggleChecks } from './toggles';

function groupList(value: string): Group[] {
  const groups = value.split(',');
  const unknown = groups.filter((group) => !(GROUPS as readonly string[]).includes(group));
  if (unknown.length) throw new InvalidArgumentError(`unknown group ${unknown.join(', ')}; the groups: ${GROUPS.join(', ')}.`);
  return groups as Group[];
}

async function main(options: SuiteOptions): Promise<number> {
  const suite = await createSuite(options);
  try {
    await suite.redisClient.connect();
    const videos = options.quick ? 30_000 : 100_000;
    const seeded = await cli(suite.env, 'seed', '--videos', String(videos), '--fresh', String(Math.round(videos / 50)));
    expect(seeded.code === 0, `seed failed: ${seeded.output}`);
    // No build by hand: the worker's controller (R21) builds on a first start.
    [suite.apiProcess, suite.workerProcess] = await Promise.all([suite.startApi(), suite.startWorker()]);
    await firstStartChecks(suite);
    const current = await suite.redisClient.get(suite.keys.current);
    expect(current, 'no version became current after the first start');
    suite.current = current;
    suite.queue = await suite.redisClient.lRange(suite.keys.queue(current), 0, -1);

    await loadChecks(suite);
    await badInputChecks(suite);
    await counterChecks(suite);
    await toggleChecks(suite);
    await accessChecks(suite);
    await faultChecks(suite);
    await secretsChecks(suite);
    await dataLossChecks(suite);
    await killChecks(suite);
    await rampChecks(suite);
    await heldChecks(suite);
    await mongoFaultChecks(suite);
  } finally {
    await suite.close();
  }
  return report(suite);
}

const program = new Command('pnpm test:reliability')
  .description('The API and the worker as processes, broken on purpose (Redis, MongoDB, SIGKILL) and exercised as clients would; a summary table at the end.')
  .option('--quick', 'shorter load, fewer videos and model runs, likes only in the counter burst, no kill checks')
  .option('--only <groups>', `run these groups only, comma-separated: ${GROUPS.join(', ')}`, groupList)
  .action(async (options: SuiteOptions) => {
    process.exitCode = await main({ quick: options.quick === true, only: options.only });
  });

program.parseAsync(process.argv).then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    console.error('reliability suite crashed:', err);
    process.exit(1);
  },
);
