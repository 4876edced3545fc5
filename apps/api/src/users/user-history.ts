/**
 * Per-user "recent views" and "not interested" (SPEC V1–V4), stored as bounded blobs of 4-byte
 * fingerprints. Both keys of a user share the user's hash tag; the feed reads them with one
 * pipelined round trip, in parallel with the ring read (which is in the version's slot).
 */
import { decodeFingerprints, fingerprint, fingerprintNumber, runScript, type Redis, type RedisKeys } from '@feed/storage';

const DAY_MS = 24 * 60 * 60 * 1000;
/** "Not interested" is long-term: kept a year after the user's last mark. */
const NOT_INTERESTED_TTL_MS = 365 * DAY_MS;

export interface UserHistoryOptions {
  viewHistorySize: number;
  viewHistoryTtlDays: number;
  notInterestedMax: number;
}

export interface UserFilter {
  viewed(videoId: string): boolean;
  notInterested(videoId: string): boolean;
}

export class UserHistory {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly options: UserHistoryOptions,
  ) {}

  /** Appends to one of the user's bounded lists (newest last, oldest dropped past `max`). */
  private append(key: string, videoId: string, max: number, ttlMs: number): Promise<number> {
    return runScript<number>(this.redis, 'record-fingerprint', [key], [fingerprint(videoId), String(max), String(ttlMs)]);
  }

  recordView(userKey: string, videoId: string): Promise<number> {
    return this.append(this.keys.views(userKey), videoId, this.options.viewHistorySize, Math.round(this.options.viewHistoryTtlDays * DAY_MS));
  }

  markNotInterested(userKey: string, videoId: string): Promise<number> {
    return this.append(this.keys.notInterested(userKey), videoId, this.options.notInterestedMax, NOT_INTERESTED_TTL_MS);
  }

  undoNotInterested(userKey: string, videoId: string): Promise<number> {
    return runScript<number>(this.redis, 'remove-fingerprint', [this.keys.notInterested(userKey)], [fingerprint(videoId)]);
  }

  async load(userKey: string): Promise<UserFilter> {
    // One MGET: both keys carry the user's hash tag, so this works on Redis Cluster too.
    const [views, marks] = await this.redis.mGetBuffers([this.keys.views(userKey), this.keys.notInterested(userKey)]);
    const viewed = decodeFingerprints(views);
    const notInterested = decodeFingerprints(marks);
    return {
      viewed: (id) => viewed.size > 0 && viewed.has(fingerprintNumber(id)),
      notInterested: (id) => notInterested.size > 0 && notInterested.has(fingerprintNumber(id)),
    };
  }
}
