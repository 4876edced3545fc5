import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { unauthorized } from './errors';

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Basic auth for admin surfaces (SPEC C), `realm` per deployable; the user goes to `res.locals.adminUser` for the audit trail (D6). */
export function basicAuth(user: string, password: string, realm: string): RequestHandler {
  return (req, res, next) => {
    // Auth schemes are case-insensitive (RFC 7235 section 2.1).
    const match = /^Basic +([A-Za-z0-9+/=]+)$/i.exec(req.header('authorization') ?? '');
    const [givenUser, ...rest] = match ? Buffer.from(match[1], 'base64').toString('utf8').split(':') : [];
    if (match && safeEqual(givenUser ?? '', user) && safeEqual(rest.join(':'), password)) {
      res.locals.adminUser = givenUser;
      return next();
    }
    res.setHeader('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`);
    next(unauthorized('admin credentials required'));
  };
}

/** The admin user a request was authenticated as (after `basicAuth`). */
export function adminUserOf(res: Response): string {
  return typeof res.locals.adminUser === 'string' ? res.locals.adminUser : 'unknown';
}
