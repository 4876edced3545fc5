/**
 * Guest devices (SPEC V1, R23, issue 52): a device's record (first seen, recent views, hourly
 * readout count) is one field of a bucket hash, bucketed as offsets (R22): ~40 bytes, not 290.
 * First seen tells the ramp's judge a made-up device. New ids are limited per client address.
 */
import { createHash } from 'node:crypto';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

const HOUR_MS = 3_600_000;
const HEADER_BYTES = 14;

/** Where a device's record lives: its bucket and its 8-byte field (a digest, whatever the id's length). */
export type GuestSlot = { key: string; field: Buffer };

export function guestSlot(keys: RedisKeys, buckets: number, deviceKey: string): GuestSlot {
  const digest = createHash('sha1').update(deviceKey).digest();
  return { key: keys.guests(digest.readUInt32BE(0) % buckets), field: digest.subarray(4, 12) };
}

/** How long a record lives after its last write (the views' expiry, V1), and how many views it keeps. */
export type GuestRecordOptions = { ttlMs: number; maxViews: number; hourlyCap: number };

const hourOf = (at: Date) => Math.floor(at.getTime() / HOUR_MS);

/** A device's first view of a video is `admitted` by the readout as readout-admit answers (0 repeat, -1 over the cap, 1 first of the hour, 2 counted). */
export type GuestSight = { admitted: number; firstSeen: Date };

async function record(redis: Redis, slot: GuestSlot, fingerprint: Buffer | '', options: GuestRecordOptions, now: Date): Promise<GuestSight> {
  const ttlHours = Math.max(1, Math.round(options.ttlMs / HOUR_MS));
  const args = [slot.field, fingerprint, String(options.maxViews), String(hourOf(now)), String(ttlHours), String(Math.round(options.ttlMs)), String(options.hourlyCap)];
  const [admitted, firstHour] = await runScript<[number, number]>(redis, 'guest-record', [slot.key], args);
  return { admitted: Number(admitted), firstSeen: new Date(Number(firstHour) * HOUR_MS) };
}

/** Records a view (its fingerprint) of the device, first seen now when it has no record. */
export const recordGuestView = (redis: Redis, slot: GuestSlot, fingerprint: Buffer, options: GuestRecordOptions, now = new Date()) => record(redis, slot, fingerprint, options, now);

/** Records the sight of a device with no record (its first request), so it is known from now on. */
export const registerGuest = (redis: Redis, slot: GuestSlot, options: GuestRecordOptions, now = new Date()) => record(redis, slot, '', options, now);

/** The device's record unless it has none or it lapsed: when it was first seen and its views' fingerprints. */
export async function readGuest(redis: Redis, slot: GuestSlot, ttlMs: number, now = new Date()): Promise<{ firstSeen: Date; views: Buffer } | null> {
  const stored = await redis.hGetBuffer(slot.key, slot.field);
  if (!stored || stored.length < HEADER_BYTES || (stored.readUInt32BE(4) + 1) * HOUR_MS + ttlMs < now.getTime()) return null;
  return { firstSeen: new Date(stored.readUInt32BE(0) * HOUR_MS), views: stored.subarray(HEADER_BYTES) };
}

/** Whether the device has a record, lapsed or not (a lapsed one is swept or restarted by its next write). */
export const isKnownGuest = async (redis: Redis, slot: GuestSlot) => Boolean(await redis.hExists(slot.key, slot.field));

/** Takes one of `address`'s points: null when granted, else the milliseconds until one is free. Throws when Redis fails. */
export type NewDeviceLimiter = (address: string) => Promise<number | null>;

/** The limiter of new device ids: `points` per client address per `durationS` seconds, in this Redis. */
export function newDeviceLimiter(redis: Redis, keys: RedisKeys, points: number, durationS: number): NewDeviceLimiter {
  const limiter = new RateLimiterRedis({ storeClient: redis, useRedisPackage: true, keyPrefix: keys.newDevices, points, duration: durationS });
  return (address) =>
    limiter.consume(address).then(
      () => null,
      (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) return rejection.msBeforeNext;
        throw rejection;
      },
    );
}
