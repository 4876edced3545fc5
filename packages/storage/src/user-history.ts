/**
 * Per-user "recent views" and "not interested" (SPEC V1–V4), bounded blobs of 4-byte fingerprints
 * under the user's hash tag, read in one round trip beside the ring read. A guest's views are a
 * field of a bucket (guest-devices.ts, issue 52): a made-up device id costs tens of bytes.
 */
import { READOUT_CLIENT_HOURLY_CAP } from '@feed/domain';
import { decodeFingerprints, fingerprint, fingerprintNumber, recordFingerprint, removeFingerprint } from './fingerprint';
import { guestSlot, isKnownGuest, readGuest, recordGuestView, registerGuest, type GuestSight } from './guest-devices';
import type { Redis } from './redis-client';
import type { RedisKeys } from './redis-keys';

const DAY_MS = 24 * 60 * 60 * 1000;
/** "Not interested" is long-term: kept a year after the user's last mark. */
const NOT_INTERESTED_TTL_MS = 365 * DAY_MS;

/** A guest's key (the API's `guestIdentity`: `g:<device id>`); a signed-in user's is `u:<id>`. */
export const isGuestKey = (key: string) => key.startsWith('g:');

export interface UserHistoryOptions {
  viewHistorySize: number;
  viewHistoryTtlDays: number;
  notInterestedMax: number;
  guestBuckets: number;
}

export interface UserFilter {
  viewed(videoId: string): boolean;
  notInterested(videoId: string): boolean;
}

export class UserHistory {
  constructor(private readonly redis: Redis, private readonly keys: RedisKeys, private readonly options: UserHistoryOptions) {}

  private get viewsTtlMs() {
    return Math.round(this.options.viewHistoryTtlDays * DAY_MS);
  }

  private guest(userKey: string) {
    return { slot: guestSlot(this.keys, this.options.guestBuckets, userKey), options: { ttlMs: this.viewsTtlMs, maxViews: this.options.viewHistorySize, hourlyCap: READOUT_CLIENT_HOURLY_CAP } };
  }

  /** A guest's view answers whether the readout counts it and when the device was first seen (the readout's admission for guests). */
  async recordView(userKey: string, videoId: string): Promise<GuestSight | undefined> {
    if (!isGuestKey(userKey)) {
      await recordFingerprint(this.redis, this.keys.views(userKey), videoId, this.options.viewHistorySize, this.viewsTtlMs);
      return undefined;
    }
    const { slot, options } = this.guest(userKey);
    return recordGuestView(this.redis, slot, fingerprint(videoId), options);
  }

  /** Whether a guest device has a record (it was seen before); see storage's isKnownGuest. */
  knownGuest(userKey: string): Promise<boolean> {
    return isKnownGuest(this.redis, this.guest(userKey).slot);
  }

  /** Records a new guest device's first request: first seen now. */
  async registerGuest(userKey: string): Promise<void> {
    const { slot, options } = this.guest(userKey);
    await registerGuest(this.redis, slot, options);
  }

  /** When a guest device was first seen; null when it has no record. */
  async guestFirstSeen(userKey: string): Promise<Date | null> {
    return (await readGuest(this.redis, this.guest(userKey).slot, this.viewsTtlMs))?.firstSeen ?? null;
  }

  markNotInterested(userKey: string, videoId: string): Promise<number> {
    return recordFingerprint(this.redis, this.keys.notInterested(userKey), videoId, this.options.notInterestedMax, NOT_INTERESTED_TTL_MS);
  }

  undoNotInterested(userKey: string, videoId: string): Promise<number> {
    return removeFingerprint(this.redis, this.keys.notInterested(userKey), videoId);
  }

  async load(userKey: string): Promise<UserFilter> {
    // One MGET (both keys share the user's hash tag); a guest's old views key, until it expires, too.
    const [[views, marks], guest] = await Promise.all([
      this.redis.mGetBuffers([this.keys.views(userKey), this.keys.notInterested(userKey)]),
      isGuestKey(userKey) ? readGuest(this.redis, this.guest(userKey).slot, this.viewsTtlMs) : null,
    ]);
    const viewed = decodeFingerprints(guest ? Buffer.concat([views ?? Buffer.alloc(0), guest.views]) : views);
    const notInterested = decodeFingerprints(marks);
    return { viewed: (id) => viewed.size > 0 && viewed.has(fingerprintNumber(id)), notInterested: (id) => notInterested.size > 0 && notInterested.has(fingerprintNumber(id)) };
  }
}
