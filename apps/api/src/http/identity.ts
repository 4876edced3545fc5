/**
 * Who is calling (SPEC C): a user by a verified HS256 bearer token (`sub` = user id), or a guest
 * by `X-Device-Id`. A present but bad token is always 401, even when a device id is also sent.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import jwt from 'jsonwebtoken';
import { badRequest, unauthorized } from '@feed/http';

export interface Identity {
  /** Key for the user's Redis state: "u:<sub>" or "g:<deviceId>". */
  key: string;
  userId?: string;
  deviceId?: string;
}

export const DEVICE_ID = /^[A-Za-z0-9_-]{8,64}$/;
export const USER_ID = /^[A-Za-z0-9_:.@-]{1,64}$/;

/** The one place that names a user's or a guest's Redis state. */
export const userIdentity = (userId: string): Identity => ({ key: `u:${userId}`, userId });
export const guestIdentity = (deviceId: string): Identity => ({ key: `g:${deviceId}`, deviceId });

const secretKeys = new Map<string, KeyObject>();

/** The secret as a KeyObject, made once: from a string jsonwebtoken tries a public-key parse per call (a quarter of the feed's CPU). */
function secretKey(secret: string): KeyObject {
  let key = secretKeys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    secretKeys.set(secret, key);
  }
  return key;
}

/**
 * Verified tokens by exact text (a client sends the same one every swipe), bounded in bytes; an entry
 * never outlives `exp`, or ten minutes without one. A changed secret is checked on every hit.
 */
const VERIFIED_TOKEN_TTL_MS = 10 * 60_000;
/** Heap bytes of an entry beside its strings, measured with `--expose-gc` (609 bytes for a 132-character token). */
const TOKEN_ENTRY_BYTES = 450;
type VerifiedToken = { identity: Identity; secret: string; expiresAtMs: number }; // exp by the wall clock: the ttl's clock stops in a VM's suspend
const tokenEntryBytes = (entry: VerifiedToken, token: string) => TOKEN_ENTRY_BYTES + token.length + 2 * (entry.identity.userId?.length ?? 0);
const tokenCache = (maxBytes: number) => new LRUCache<string, VerifiedToken>({ ttl: VERIFIED_TOKEN_TTL_MS, maxSize: maxBytes, sizeCalculation: tokenEntryBytes });
let verifiedTokens = tokenCache(16 * 1024 * 1024);

/** Gives the process's token cache `maxBytes` (its share of the memory budget); a new size starts it empty. */
export function sizeTokenCache(maxBytes: number): void {
  if (verifiedTokens.maxSize !== maxBytes) verifiedTokens = tokenCache(maxBytes);
}

/** Estimated heap bytes held by verified tokens (`feed_cache_bytes{cache="token"}`). */
export const tokenCacheBytes = (): number => verifiedTokens.calculatedSize;

function verifyToken(token: string, secret: string): Identity {
  const now = Date.now();
  const cached = verifiedTokens.get(token);
  if (cached && cached.secret === secret && now < cached.expiresAtMs) return cached.identity;
  let payload: string | jwt.JwtPayload;
  try {
    payload = jwt.verify(token, secretKey(secret), { algorithms: ['HS256'] });
  } catch (err) {
    throw unauthorized(err instanceof jwt.TokenExpiredError ? 'token expired' : 'invalid token');
  }
  const sub = typeof payload === 'object' ? payload.sub : undefined;
  if (typeof sub !== 'string' || !USER_ID.test(sub)) throw unauthorized('token has no valid sub');
  const identity = userIdentity(sub);
  const exp = typeof payload === 'object' && typeof payload.exp === 'number' ? payload.exp * 1000 : Infinity;
  // The least recently used token goes when full; none outlives its `exp`.
  verifiedTokens.set(token, { identity, secret, expiresAtMs: exp }, { ttl: Math.max(1, Math.min(exp - now, VERIFIED_TOKEN_TTL_MS)) });
  return identity;
}

function userFromToken(req: Request, secret: string): Identity | undefined {
  const header = req.header('authorization');
  if (header === undefined) return undefined;
  // Auth schemes are case-insensitive (RFC 7235 section 2.1).
  const match = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i.exec(header);
  if (!match) throw unauthorized('Authorization must be "Bearer <token>"');
  return verifyToken(match[1], secret);
}

/** The caller, user or guest; 401 when neither is present or the token is bad. */
export function identify(req: Request, secret: string): Identity {
  const user = userFromToken(req, secret);
  if (user) return user;
  const deviceId = req.header('x-device-id');
  if (deviceId === undefined) throw unauthorized('send a bearer token or an X-Device-Id header');
  if (!DEVICE_ID.test(deviceId)) throw badRequest("'X-Device-Id' must be 8-64 characters of A-Z, a-z, 0-9, _ or -");
  return guestIdentity(deviceId);
}

/** The caller, who must be a signed-in user. */
export function requireUser(req: Request, secret: string): Identity & { userId: string } {
  const user = userFromToken(req, secret);
  if (!user) throw unauthorized();
  return user as Identity & { userId: string };
}
