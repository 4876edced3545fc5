/**
 * `pnpm bench build --videos N [--fresh M]`: one daily build over N videos, then the next day's
 * build after 1 % of the videos got new interactions. Each build runs in a process of its own from
 * the compiled packages (build-child.cjs; `pnpm build` runs first) with the worker image's
 * NODE_OPTIONS, so its peak RSS is the build's as the worker runs it.
 * Prints each phase, videos/s, and the Redis write phase against its limit: bare pipelined RPUSHes
 * of the same ids (limit-child.cjs) in a fresh process, first run (the build's write is its
 * process's first; median of LIMIT_PROCESSES), later runs and the legacy refill beside it.
 * `pnpm bench build --assemble-only --videos N`: the domain alone on synthetic candidates.
 * Last two lines:
 *   next-day changed=<c> scores_written=<w> scores_seconds=<s>
 *   videos=<n> seconds=<s> write/limit=<x> peak_rss_mb=<m>
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { assembleQueue, splitPools, versionFor } from '@feed/domain';
import { CandidateColumns } from '@feed/worker';
import { videoModel } from '@feed/storage';
import type { BuildResult } from '@feed/worker';
import { ROOT } from '../support/processes';
import { argValue, benchStores, seedInChild } from './support';

const exec = promisify(execFile);

interface ChildBuild {
  result: BuildResult;
  seconds: number;
  peakRssMb: number;
  /** The build process's own CPU time (process.cpuUsage), user and system. */
  cpuUserSeconds: number;
  cpuSystemSeconds: number;
  /** The peak RSS (MB) so far when each phase started. */
  peakBefore: Record<string, number>;
  startRssMb: number;
}

/** The worker image's NODE_OPTIONS (its heap cap): the bench runs the build as the image does. */
function workerNodeOptions(): string {
  const dockerfile = readFileSync(path.join(ROOT, 'infra/Dockerfile.worker'), 'utf8');
  const options = /^ENV NODE_OPTIONS="([^"]*)"/m.exec(dockerfile)?.[1];
  if (options === undefined) throw new Error('infra/Dockerfile.worker sets no NODE_OPTIONS');
  return options;
}

/** Runs a bench child script with the worker image's NODE_OPTIONS and returns its last JSON line. */
async function runChild<T>(script: string, env: Record<string, string>): Promise<T> {
  const { stdout } = await exec(process.execPath, [...workerNodeOptions().split(' '), path.join(__dirname, script)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

function buildInChild(mongoUri: string, prefix: string, at: Date, options: { switch?: boolean } = {}): Promise<ChildBuild> {
  return runChild('build-child.cjs', { BENCH_MONGO_URI: mongoUri, BENCH_REDIS_PREFIX: prefix, BENCH_AT: at.toISOString(), BENCH_SWITCH: options.switch ? '1' : '0' });
}

/** Fresh processes measuring the limit: an odd count, so the median is one process's figure. */
const LIMIT_PROCESSES = 3;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function measureWriteLimit(prefix: string, queueKey: string) {
  const runs: Array<{ rPush: number[]; sAdd: number }> = [];
  for (let i = 0; i < LIMIT_PROCESSES; i++) runs.push(await runChild('limit-child.cjs', { BENCH_REDIS_PREFIX: prefix, BENCH_QUEUE: queueKey }));
  return {
    /** Median of the bare RPUSH's first run in each process: what a process's first bulk write costs. */
    cold: median(runs.map((run) => run.rPush[0])),
    /** Median of the runs after the first. */
    warm: median(runs.flatMap((run) => run.rPush.slice(1))),
    /** Median of the bare SADD, run after the RPUSHes. */
    sAdd: median(runs.map((run) => run.sAdd)),
  };
}

/**
 * `--assemble-only`: the domain alone on synthetic candidates (no stores): columns, pools, the
 * duplicate check and the 17+3 assembly, with this process's peak RSS.
 */
function assembleOnly(videos: number, fresh: number): void {
  const now = Date.now();
  let peak = process.memoryUsage().rss;
  const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
  const started = performance.now();
  const candidates = new CandidateColumns(videos + fresh);
  const ids = randomBytes(12 * 4096);
  for (let i = 0; i < videos + fresh; i++) {
    // Unique ids: a random 8-byte head and the index as the 4-byte counter, as ObjectIds have.
    const id = ids.subarray((i % 4096) * 12, (i % 4096) * 12 + 12);
    id.writeUInt32BE(i, 8);
    const reviewAt = i < videos ? now - 2 * 86_400_000 - (i % 2_592_000) * 1000 : now - (i % 86_000) * 1000;
    candidates.push(id, (i * 2654435761) % 1500, reviewAt, null);
    if (i % 1_000_000 === 0) sample();
  }
  const read = performance.now();
  sample();
  const duplicates = candidates.countDuplicateIds();
  sample();
  const pools = splitPools(candidates, now);
  sample();
  const { ids: order, blocks } = assembleQueue(pools.high, pools.fresh, versionFor(new Date(now), 'Asia/Shanghai'));
  sample();
  const seconds = (performance.now() - started) / 1000;
  console.log(`columns filled in ${((read - started) / 1000).toFixed(2)} s; assembled ${order.length} ids in ${blocks.length} blocks, ${duplicates} duplicates, in ${((performance.now() - read) / 1000).toFixed(2)} s`);
  console.log(`assemble-only videos=${videos + fresh} seconds=${seconds.toFixed(2)} peak_rss_mb=${Math.round(peak / 1048576)}`);
}

export async function runBuildBench(): Promise<void> {
  const videos = Number(argValue('videos', '100000'));
  const fresh = Number(argValue('fresh', String(Math.round(videos * 0.01))));
  if (!Number.isInteger(videos) || videos <= 0) throw new Error('--videos must be a positive integer');
  if (process.argv.includes('--assemble-only')) return assembleOnly(videos, fresh);
  console.log('compiling (pnpm build) so the build runs as the worker does');
  await exec('pnpm', ['build'], { cwd: ROOT });
  const { mongoUri, connection, redis, keys, prefix, close } = await benchStores();
  try {
    const model = videoModel(connection);
    await model.init();
    const seedStart = performance.now();
    await seedInChild(mongoUri, videos, fresh);
    console.log(`seeded ${videos + fresh} videos in ${((performance.now() - seedStart) / 1000).toFixed(2)} s (not part of the build)`);

    const at = new Date();
    const first = await buildInChild(mongoUri, prefix, at);
    const { result } = first;
    const ids = await redis.lRange(keys.queue(result.version), 0, -1);
    const limit = await measureWriteLimit(prefix, keys.queue(result.version));

    const t = result.timings;
    console.log('phase        seconds   peak RSS MB at start');
    for (const phase of ['lock', 'read', 'assemble', 'write', 'verify', 'switch', 'legacy', 'scores', 'done'] as const) {
      console.log(`${phase.padEnd(12)} ${(t[phase] ?? 0).toFixed(3).padStart(7)}   ${first.peakBefore[phase] ?? ''}`);
    }
    console.log(`queue length ${ids.length}, high ${result.meta?.highCount}, new ${result.meta?.newCount}; rss ${first.startRssMb} MB connected, ${first.peakRssMb} MB peak`);
    const write = t.write ?? 0;
    console.log(`videos/s (whole build) ${Math.round((videos + fresh) / first.seconds)}; redis write ${write.toFixed(3)} s`);
    console.log(`build process CPU ${(first.cpuUserSeconds + first.cpuSystemSeconds).toFixed(2)} s (user ${first.cpuUserSeconds.toFixed(2)}, system ${first.cpuSystemSeconds.toFixed(2)}) in ${first.seconds.toFixed(2)} s wall, against ${process.env.MONGO_URL ? 'MONGO_URL' : 'the embedded MongoDB (a test double: its share of the wall time is not MongoDB\'s)'}`);
    console.log(`bare pipelined RPUSH of the same ids (median of ${LIMIT_PROCESSES} fresh processes): first run ${limit.cold.toFixed(3)} s (the limit: the write is its process's first too), later runs ${limit.warm.toFixed(3)} s (write = ${(write / Math.max(limit.warm, 0.001)).toFixed(2)} x)`);
    console.log(`legacy set refill ${t.legacy?.toFixed(3)} s = ${((t.legacy ?? 0) / Math.max(limit.sAdd, 0.001)).toFixed(2)} x a bare pipelined SADD run after RPUSHes (${limit.sAdd.toFixed(3)} s; a set costs Redis ${(limit.sAdd / Math.max(limit.warm, 0.001)).toFixed(1)} x a list); scores written ${result.scoresWritten}`);

    // The next day: 1 % of the videos got an interaction since.
    const changed = ids.filter((_, i) => i % 100 === 0);
    for (let i = 0; i < changed.length; i += 5000) await model.updateMany({ _id: { $in: changed.slice(i, i + 5000) } }, { $inc: { recommendLikeCount: 1 } });
    const next = await buildInChild(mongoUri, prefix, new Date(at.getTime() + 24 * 3600_000), { switch: true });
    console.log(`next-day changed=${changed.length} scores_written=${next.result.scoresWritten} scores_seconds=${(next.result.timings.scores ?? 0).toFixed(2)}`);
    console.log(`videos=${videos + fresh} seconds=${first.seconds.toFixed(2)} cpu_seconds=${(first.cpuUserSeconds + first.cpuSystemSeconds).toFixed(2)} write/limit=${(write / Math.max(limit.cold, 0.001)).toFixed(2)} peak_rss_mb=${first.peakRssMb}`);
  } finally {
    await close();
  }
}
