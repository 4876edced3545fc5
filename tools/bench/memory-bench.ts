/**
 * `pnpm bench memory [--users U]`: Redis memory per user for the V1 recent-views window and V3
 * "not interested" marks as stored (4-byte fingerprints), against the alternatives, measured
 * with MEMORY USAGE; the offsets per user at 100k and 1M users (R22; or at U), measured as
 * used_memory of a Redis of the bench's own; and the API's queue copy per million videos.
 * `pnpm bench guests [--devices D] [--views V] [--buckets B]`: what a guest device with V views
 * (default 1) costs (issue 52), in the former per-device keys and in the guest buckets, as used_memory.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { offsetBucketsFor } from '@feed/domain';
import { admitReadoutAction, claimPositions, connectRedis, createRedisKeys, fingerprint, readRingVersion, runScript, UserHistory, VersionStore, type Redis, type RedisKeys, type RingVersion } from '@feed/storage';
import { QueueCopies } from '@feed/api';
import { freePort, startRedis } from '../support/processes';
import { argValue, benchRedis } from './support';

const hexId = () => randomBytes(12).toString('hex');

export async function runMemoryBench(): Promise<void> {
  const window = Number(argValue('views', '200'));
  const marks = Number(argValue('marks', '500'));
  const users = Number(argValue('users', '100000'));
  const { redis, keys, cleanup } = await benchRedis();
  try {
    const ids = Array.from({ length: Math.max(window, marks) }, hexId);
    const measure = async (key: string) => Number(await redis.memoryUsage(key, { SAMPLES: 0 }));
    const rows: Array<[string, number]> = [];

    await redis.set(keys.views('u:fp'), Buffer.concat(ids.slice(0, window).map(fingerprint)));
    rows.push([`views: ${window} x 4-byte fingerprints in a STRING (chosen)`, await measure(keys.views('u:fp'))]);
    await redis.rPush(keys.views('u:list24'), ids.slice(0, window));
    rows.push([`views: ${window} x 24-char ids in a LIST`, await measure(keys.views('u:list24'))]);
    await redis.set(keys.views('u:bin12'), Buffer.concat(ids.slice(0, window).map((id) => Buffer.from(id, 'hex'))));
    rows.push([`views: ${window} x 12-byte binary ids in a STRING`, await measure(keys.views('u:bin12'))]);
    await redis.sAdd(keys.views('u:set24'), ids.slice(0, window));
    rows.push([`views: ${window} x 24-char ids in a SET`, await measure(keys.views('u:set24'))]);
    await redis.set(keys.notInterested('u:fp'), Buffer.concat(ids.slice(0, marks).map(fingerprint)));
    rows.push([`not interested: ${marks} x 4-byte fingerprints (chosen, the bound)`, await measure(keys.notInterested('u:fp'))]);

    console.log('structure'.padEnd(64), 'bytes');
    for (const [name, bytes] of rows) console.log(name.padEnd(64), bytes);
    console.log(`views_bytes_per_user=${rows[0][1]} not_interested_max_bytes_per_user=${rows[4][1]}`);
  } finally {
    await cleanup();
  }
  await offsetsAndQueueCopies(users === 100_000 ? [100_000, 1_000_000] : [users]);
}

/** Empties the bench's own Redis server (the service's client interface has no FLUSHALL). */
const flushAll = (redis: Redis) => redis.eval("return redis.call('FLUSHALL')", { keys: [], arguments: [] });

/** used_memory of a Redis server of the bench's own: nothing else writes to it. */
async function usedMemory(redis: Redis): Promise<number> {
  const info = String(await redis.eval("return redis.call('INFO', 'memory')", { keys: [], arguments: [] }));
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

/**
 * R22's figures: the offsets' Redis memory per user, as the claim script stores them (the
 * bucket count a build picks for that many users, each bucket with its expiry), against the
 * seed's one hash per version; and the bytes an API instance spends on a verified queue copy.
 */
async function offsetsAndQueueCopies(userCounts: number[]): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-memory-bench-'));
  const port = await freePort();
  const server = await startRedis(port, dir);
  const redis = await connectRedis({ redisUrl: `redis://127.0.0.1:${port}` });
  const keys = createRedisKeys('bench:');
  try {
    const figures: string[] = [];
    for (const users of userCounts) {
      await flushAll(redis);
      const ring: RingVersion = { version: '20260724', length: 20_000, buildId: 'bench', offsetBuckets: offsetBucketsFor(users), expiresAt: Date.now() + 72 * 3_600_000 };
      const before = await usedMemory(redis);
      for (let u = 0; u < users; u += 2_000) {
        await Promise.all(Array.from({ length: Math.min(2_000, users - u) }, (_, i) => claimPositions(redis, keys, ring, `u:${(u + i).toString(16).padStart(24, '0')}`, 1 + ((u + i) % 60))));
      }
      const bucketed = (await usedMemory(redis)) - before;
      await flushAll(redis);
      const seedBefore = await usedMemory(redis);
      for (let u = 0; u < users; u += 10_000) {
        const fields: Record<string, string> = {};
        for (let j = u; j < Math.min(users, u + 10_000); j++) fields[`u:${j.toString(16).padStart(24, '0')}`] = String(1 + (j % 60));
        await redis.hSet('bench:offset:{20260724}', fields);
      }
      const single = (await usedMemory(redis)) - seedBefore;
      console.log(`offsets, ${users} users: ${ring.offsetBuckets} buckets ${(bucketed / users).toFixed(1)} B/user (seed layout, one hash: ${(single / users).toFixed(1)} B/user)`);
      figures.push(`offsets_b_per_user_${users}=${(bucketed / users).toFixed(1)}`);
    }

    // The API's queue copy: a published queue of one million ids, loaded and verified as the API does.
    await flushAll(redis);
    const length = 1_000_000;
    for (let i = 0; i < length; i += 10_000) await redis.rPush(keys.queue('20260724'), Array.from({ length: Math.min(10_000, length - i) }, hexId));
    await redis.hSet(keys.meta('20260724'), { length: String(length), buildId: 'bench', offsetBuckets: '256' });
    await redis.expire(keys.queue('20260724'), 3600);
    global.gc?.();
    const heapBefore = process.memoryUsage();
    const copies = new QueueCopies({ versions: new VersionStore(redis, keys), queueCopiesMax: 1 });
    const ring = (await readRingVersion(redis, keys, '20260724'))!;
    await copies.ensure(ring);
    if (!copies.idsAt(ring, 0, 1)) throw new Error('the queue copy was not loaded');
    global.gc?.();
    const heapAfter = process.memoryUsage();
    const held = heapAfter.arrayBuffers - heapBefore.arrayBuffers;
    console.log(`API queue copy, ${length} videos: ${copies.bytes()} B of ids (${(held / 1e6).toFixed(1)} MB more ArrayBuffer memory; heap used ${((heapAfter.heapUsed - heapBefore.heapUsed) / 1e6).toFixed(1)} MB more)`);
    console.log(`${figures.join(' ')} queue_copy_mb_per_million=${(copies.bytes() / 1e6).toFixed(1)}`);
  } finally {
    await redis.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A Redis server of the bench's own (CHILD_PORT_RANGE confines its port), for `use`. */
async function privateRedis(use: (redis: Redis, keys: RedisKeys) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-memory-bench-'));
  const port = await freePort();
  const server = await startRedis(port, dir);
  const redis = await connectRedis({ redisUrl: `redis://127.0.0.1:${port}` });
  try {
    await use(redis, createRedisKeys('bench:'));
  } finally {
    await redis.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runGuestMemoryBench(): Promise<void> {
  const devices = Number(argValue('devices', '50000'));
  const buckets = Number(argValue('buckets', '4096'));
  const vids = Array.from({ length: Number(argValue('views', '1')) }, hexId);
  const options = { viewHistorySize: 200, viewHistoryTtlDays: 7, notInterestedMax: 500, guestBuckets: buckets };
  const device = (i: number) => `g:${randomBytes(8).toString('hex')}${i}`;
  await privateRedis(async (redis, keys) => {
    const history = new UserHistory(redis, keys, options);
    /** used_memory added by one view from each of `devices` devices, `view` doing what a view costs. */
    const perDevice = async (view: (key: string) => Promise<unknown>) => {
      await flushAll(redis);
      const before = await usedMemory(redis);
      for (let d = 0; d < devices; d += 500) await Promise.all(Array.from({ length: Math.min(500, devices - d) }, (_, i) => view(device(d + i))));
      return ((await usedMemory(redis)) - before) / devices;
    };
    // Before issue 52: the device's own views key and readout hash of the day.
    const keysPerDevice = await perDevice(async (key) => {
      for (const vid of vids) {
        await runScript(redis, 'record-fingerprint', [keys.views(key)], [fingerprint(vid), '200', String(7 * 86_400_000)]);
        await admitReadoutAction(redis, keys, key, new Date(), 'ring', 'view', vid);
      }
    });
    // Now: the device's first request records it (the new-device limit), its view updates the record (the readout's admission too).
    const seen: string[] = [];
    const filterOf = new Map<string, Awaited<ReturnType<UserHistory['load']>>>();
    const bucketed = await perDevice(async (key) => {
      await history.registerGuest(key);
      for (const vid of vids) await history.recordView(key, vid);
      if (seen.length < 1000) seen.push(key);
    });
    for (const key of seen) filterOf.set(key, await history.load(key));
    for (const key of seen) if (!vids.every((vid) => filterOf.get(key)!.viewed(vid))) throw new Error(`a view of ${key} is not filtered from its next page`);
    console.log(`guest devices, ${vids.length} views each, ${devices} devices: own keys ${keysPerDevice.toFixed(1)} B/device, ${buckets} buckets ${bucketed.toFixed(1)} B/device (views filtered: ${seen.length} sampled)`);
    console.log(`guest_b_per_device_before=${keysPerDevice.toFixed(1)} guest_b_per_device=${bucketed.toFixed(1)}`);
  });
}
