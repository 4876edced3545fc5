/**
 * 4-byte fingerprints of video ids for "recent views" and "not interested" (SPEC V1, V3, V4): 200
 * views cost 800 bytes, not ~6 KB; a false skip has a chance of ~200 / 2^32 ≈ 5e-8 per candidate.
 */
import { fnv1a32 } from '@feed/domain';
import { runScript } from './lua-scripts';
import type { Redis } from './redis-client';

export const FINGERPRINT_BYTES = 4;

/** The fingerprint as a number: FNV-1a (32 bit) over the id's lower-case hex characters. */
export function fingerprintNumber(videoId: string): number {
  return fnv1a32(videoId.toLowerCase());
}

/** The fingerprint as stored: 4 bytes, big-endian. */
export function fingerprint(videoId: string): Buffer {
  const out = Buffer.alloc(FINGERPRINT_BYTES);
  out.writeUInt32BE(fingerprintNumber(videoId));
  return out;
}

/** The fingerprints in a stored blob, as numbers for set lookups. */
export function decodeFingerprints(blob: Buffer | null | undefined): Set<number> {
  const set = new Set<number>();
  if (!blob) return set;
  for (let i = 0; i + FINGERPRINT_BYTES <= blob.length; i += FINGERPRINT_BYTES) set.add(blob.readUInt32BE(i));
  return set;
}

/** Appends `videoId`'s fingerprint to the bounded list at `key` (newest last, oldest dropped past `max`), expiring in `ttlMs`. */
export const recordFingerprint = (redis: Redis, key: string, videoId: string, max: number, ttlMs: number): Promise<number> =>
  runScript<number>(redis, 'record-fingerprint', [key], [fingerprint(videoId), String(max), String(ttlMs)]);

/** Removes `videoId`'s fingerprint from the list at `key`; the number removed. */
export const removeFingerprint = (redis: Redis, key: string, videoId: string): Promise<number> => runScript<number>(redis, 'remove-fingerprint', [key], [fingerprint(videoId)]);
