/**
 * `pnpm cli` as on-call types it (D3, issue 24): help for the CLI and each command, usage errors
 * named with exit 2, Redis-only commands without MongoDB, and no command writing into a
 * throwaway embedded MongoDB.
 */
import { hostname, userInfo } from 'node:os';
import { cli, freePort, listening } from '../support/processes';
import { useTestServices } from '../../test/support/services';

const s = useTestServices('cli');

/** The environment of a developer machine on the test's key prefix: no MONGO_URL, the embedded server's port free. */
async function withoutMongo(): Promise<{ env: Record<string, string>; port: number }> {
  const port = await freePort();
  return {
    port,
    env: { NODE_ENV: 'development', MONGO_URL: '', EMBEDDED_MONGO_PORT: String(port), REDIS_URL: process.env.TEST_REDIS_URL!, REDIS_KEY_PREFIX: s.prefix },
  };
}

describe('pnpm cli', () => {
  it('when asked for --help, then it lists every command; each command has a help of its own', async () => {
    const top = await cli({}, '--help');
    expect(top.code).toBe(0);
    for (const command of ['mongo', 'seed', 'build', 'inspect', 'explain', 'init-history', 'rollout']) expect(top.output).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    const build = await cli({}, 'build', '--help');
    expect(build.code).toBe(0);
    expect(build.output).toMatch(/--at <ISO-8601>/);
    expect(build.output).toMatch(/--switch/);
  }, 30_000);

  it.each([
    [['build', '--att', 'x'], /unknown option '--att'/],
    [['nope'], /unknown command 'nope'/],
    [['seed', '--videos', 'many'], /--videos must be a non-negative integer/],
    [['rollout', '--percent', '101'], /--percent must be 0-100/],
    [['rollout', '--enabled', 'maybe'], /--enabled <bool>.*Allowed choices are true, false/],
    [['inspect', '--version', '2026'], /a version is YYYYMMDD/],
    [['explain'], /exactly one of --user U or --device D/],
    [['rollout', '--ramp', '1,x', '--dwell', '1h'], /"--ramp\[1\]" must be a number/],
    [['rollout', '--ramp', '5,1', '--dwell', '1h'], /"--ramp" must be strictly increasing/],
    [['rollout', '--ramp', '1,5'], /--ramp needs --dwell/],
    [['rollout', '--ramp', '1,5', '--dwell', 'an hour'], /"--dwell" with value "an hour" fails to match/],
    [['rollout', '--ramp', '1,5', '--dwell', '100000000d'], /"--dwell" with value "100000000d" fails to match/],
    [['rollout', '--ramp', '1,5', '--dwell', '31d'], /"--dwell" must be from 1m to 30d/],
    [['rollout', '--ramp', '1,5', '--dwell', '1h', '--recheck', '1s'], /"--recheck" must be from 1m to 30d/],
    [['rollout', '--ramp', '1,5', '--dwell', '1h', '--min-views', '0'], /"--min-views" must be greater than or equal to 1/],
    [['rollout', '--ramp-pause', '--percent', '5'], /exclude each other/],
  ])('when run with %j, then it exits 2 naming the problem', async (args, message) => {
    const { env } = await withoutMongo();
    const run = await cli(env, ...args);
    expect({ code: run.code, named: message.test(run.output) }).toEqual({ code: 2, named: true });
  }, 30_000);

  it('when inspect and rollout run without MONGO_URL, then they answer from Redis and no MongoDB is started', async () => {
    const { env, port } = await withoutMongo();
    const inspect = await cli(env, 'inspect');
    expect(inspect.output).toMatch(/"versions"/);
    const rollout = await cli(env, 'rollout');
    expect(rollout.code).toBe(0);
    expect(rollout.output).toMatch(/enabled true \(environment\)/);
    expect(await listening(port)).toBe(false);
  }, 30_000);

  it('when on-call turns the rollout off, then rollout --history shows who, when, before and after', async () => {
    // The trail lives in MongoDB (D6): a change and the history need it.
    const env = { ...(await withoutMongo()).env, MONGO_URL: s.config.mongoUrl! };
    const off = await cli(env, 'rollout', '--enabled', 'false');
    expect(off.code).toBe(0);
    expect(off.output).toMatch(/enabled false \(override\)/);
    const history = await cli(env, 'rollout', '--history');
    expect(history.code).toBe(0);
    const [line, ...rest] = history.output.trim().split('\n');
    expect(rest).toEqual([]);
    const [, at, actor] = /^(\S+)\s+(\S+) \(cli\)\s+rollout-set\s+before (.*)\s+after (.*)$/.exec(line) ?? [];
    expect(actor).toBe(`${userInfo().username}@${hostname()}`);
    expect(Math.abs(Date.now() - Date.parse(at))).toBeLessThan(60_000);
    expect(line).toMatch(/before \{"enabled":true,.*\}\s+after \{"enabled":false,.*"source":\{"enabled":"override"/);
    expect((await cli(env, 'rollout', '--history', '--clear')).code).toBe(2);
  }, 30_000);

  it('when on-call starts, pauses and resumes a ramp, then each is stored, shown and on record (R23)', async () => {
    const env = { ...(await withoutMongo()).env, MONGO_URL: s.config.mongoUrl! };
    const started = await cli(env, 'rollout', '--ramp', '1,5,25,50,100', '--dwell', '1h');
    expect(started.code).toBe(0);
    expect(started.output).toMatch(/: running, dwell 3600 s, last good 0 %/);
    expect(started.output).toMatch(/^>\s+1 %  running/m);
    expect((await cli(env, 'rollout', '--ramp', '1,100', '--dwell', '1h')).output).toMatch(/pause it before starting another/);
    expect((await cli(env, 'rollout', '--ramp-pause')).output).toMatch(/: paused \(paused by /);
    // A manual percent on a paused ramp changes the rollout only.
    expect((await cli(env, 'rollout', '--percent', '3')).output).toMatch(/percent 3 \(override\)[\s\S]*: paused/);
    expect((await cli(env, 'rollout', '--ramp-resume')).output).toMatch(/: running/);
    const history = await cli(env, 'rollout', '--history');
    expect(history.output.trim().split('\n').map((line) => /\(cli\)\s+(\S+)/.exec(line)?.[1])).toEqual(['rollout-set', 'ramp-resume', 'rollout-set', 'ramp-pause', 'rollout-set', 'ramp-start']);
  }, 60_000);

  it('when on-call runs a build by hand, then it is on record with the version it asked for and what came of it', async () => {
    const { env } = await withoutMongo();
    const withMongo = { ...env, MONGO_URL: s.config.mongoUrl! };
    expect((await cli(withMongo, 'seed', '--videos', '30', '--fresh', '5')).code).toBe(0);
    expect((await cli(withMongo, 'build')).code).toBe(0);
    const history = await cli(withMongo, 'rollout', '--history');
    expect(history.output).toMatch(/\(cli\)\s+build-requested\s+before \{"current":null,"asked":\{"at":null,"force":false,"shadow":false,"switch":false,"skipGate":false\}\}\s+after \{"current":"\d{8}","version":"\d{8}","status":"built","gate":"first-version","gateReasons":\[\]\}/);
  }, 60_000);

  it('when a forced rebuild reads a catalogue cut by 80 %, then it is held; --dismiss of it is refused, --promote switches it, --skip-gate switches a cut one at once, each on record (R23)', async () => {
    const env = { ...(await withoutMongo()).env, MONGO_URL: s.config.mongoUrl! };
    expect((await cli(env, 'seed', '--videos', '100')).code).toBe(0);
    expect((await cli(env, 'build')).code).toBe(0);
    const version = (await s.redis.get(s.keys.current))!;
    // Other tests of this file seeded the same database: lengths are read, not assumed.
    const videos = s.mongo.collection('videos');
    const built = await s.redis.lLen(s.keys.queue(version));
    const cut = async () => {
      const ids = (await videos.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id);
      await videos.deleteMany({ _id: { $in: ids.slice(0, Math.ceil(ids.length * 0.8)) } });
    };
    await cut();
    const held = await cli(env, 'build', '--force');
    expect(held.code).toBe(0);
    expect(held.output).toMatch(new RegExp(`"status": "held"[\\s\\S]*"promote": "pnpm cli build --promote ${version}"`));
    expect(await s.redis.lLen(s.keys.queue(version))).toBe(built);

    expect((await cli(env, 'build', '--promote', version, '--force')).code).toBe(2);
    // The held day is current's: a dismiss is refused (the controller would build it again) and the hold stays.
    const dismissed = await cli(env, 'build', '--dismiss', version);
    expect({ code: dismissed.code, refused: /not older than current/.test(dismissed.output) }).toEqual({ code: 1, refused: true });
    const promoted = await cli(env, 'build', '--promote', version);
    expect(promoted.code).toBe(0);
    expect(await s.redis.lLen(s.keys.queue(version))).toBe(await videos.countDocuments());
    const again = await cli(env, 'build', '--promote', version);
    expect({ code: again.code, named: /is not held/.test(again.output) }).toEqual({ code: 1, named: true });

    await cut();
    expect((await cli(env, 'build', '--force', '--skip-gate')).code).toBe(0);
    expect(await s.redis.lLen(s.keys.queue(version))).toBe(await videos.countDocuments());
    const history = (await cli(env, 'rollout', '--history')).output;
    expect(history).toMatch(/\(cli\)\s+build-requested\s+before \{[^\n]*"skipGate":true\}\}\s+after \{[^\n]*"status":"built","gate":"skipped"/);
    expect(history).toMatch(new RegExp(`\\(cli\\)\\s+build-promoted\\s+before \\{"current":"${version}","held":"${version}"`));
    expect(history).toMatch(/release gate \(worker\)\s+build-held/);
  }, 180_000);

  it.each([['seed', '--videos', '5'], ['build']])('when %s runs without MONGO_URL and no embedded server, then it refuses pointing at pnpm start, pnpm cli mongo and MONGO_URL', async (...args) => {
    const { env, port } = await withoutMongo();
    const run = await cli(env, ...args);
    expect(run.code).toBe(1);
    expect(run.output).toMatch(/pnpm start.*pnpm cli mongo.*MONGO_URL/);
    expect(await listening(port)).toBe(false);
  }, 30_000);
});
