/**
 * New guest device ids per client address (SPEC R23, issue 52): an unrecorded device takes a point
 * of its address's budget (rate-limiter-flexible) and past it gets 429 with Retry-After, before
 * anything is recorded; admitted, it is recorded and never limited again (nor are users). The
 * address is `req.ip` (X-Forwarded-For only from TRUST_PROXY), IPv6 by its /64, IPv4-mapped as
 * IPv4, a non-address as the peer. Redis unreachable or past its budget: the request goes on (R17).
 */
import type { NextFunction, Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { AppError } from '@feed/http';
import { logger } from '@feed/logger';
import type { NewDeviceLimiter, UserHistory } from '@feed/storage';
import { DEVICE_ID, guestIdentity } from './identity';
import { budgetOf } from './request-budget';

/** The budget's owner: an IPv4 address, or an IPv6 address's /64 (a host has all of its /64 to cycle through); no address, the peer's. */
export function addressOwner(ip: string, peer = 'unknown'): string {
  if (!ipaddr.isValid(ip)) return ipaddr.isValid(peer) ? addressOwner(peer) : 'unknown';
  const address = ipaddr.process(ip);
  return address.kind() === 'ipv4' ? address.toString() : `${(address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}

export function newDeviceLimit(history: UserHistory, takePoint: NewDeviceLimiter, onLimited: () => void): (req: Request, res: Response, next: NextFunction) => Promise<void> {
  return async (req, res, next) => {
    const deviceId = req.header('x-device-id');
    // Users, and requests identify() refuses, are not its business.
    if (req.header('authorization') !== undefined || deviceId === undefined || !DEVICE_ID.test(deviceId)) return next();
    const { key } = guestIdentity(deviceId);
    const { redis: deadline } = budgetOf(res);
    let waitMs: number | null;
    try {
      if (await deadline.run(() => history.knownGuest(key), 'device record')) return next();
      waitMs = await deadline.run(() => takePoint(addressOwner(req.ip ?? '', req.socket.remoteAddress)), 'new-device limit');
      if (waitMs === null) await deadline.run(() => history.registerGuest(key), 'device record');
    } catch (err) {
      logger.warn('new device not checked: Redis unavailable', { err: err instanceof Error ? err.message : String(err) });
      return next();
    }
    if (waitMs === null) return next();
    onLimited();
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    res.set('Retry-After', String(seconds));
    throw new AppError(429, 'too_many_new_devices', `too many new device ids from this address: retry in ${seconds} s`);
  };
}
