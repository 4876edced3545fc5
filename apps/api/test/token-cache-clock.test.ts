/**
 * A verified token is cached, but never past its `exp` by the wall clock jsonwebtoken judges it
 * by: the cache's own timer runs on the monotonic clock, which a suspended VM's sleep or a step of
 * the wall clock forward does not advance.
 */
import type { Request } from 'express';
import jwt from 'jsonwebtoken';
import { identify } from '../src/http/identity';

const SECRET = 'token-cache-clock-secret';
const withToken = (token: string) => {
  const req: Pick<Request, 'header'> = { header: ((name: string) => (name.toLowerCase() === 'authorization' ? `Bearer ${token}` : undefined)) as Request['header'] };
  return req as Request;
};

describe('the verified token cache and the wall clock', () => {
  afterEach(() => jest.useRealTimers());

  it('when the wall clock passes a cached token\'s exp, then the token is refused (401 token expired)', () => {
    // Only Date is faked: the cache's timer (performance.now) runs for real, as after a VM's suspend.
    jest.useFakeTimers({ doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
    jest.setSystemTime(new Date('2026-07-25T00:00:00Z'));
    const token = jwt.sign({ sub: 'clock-user' }, SECRET, { algorithm: 'HS256', expiresIn: 60 });
    expect(identify(withToken(token), SECRET).userId).toBe('clock-user');

    jest.setSystemTime(new Date('2026-07-25T02:00:00Z'));
    expect(() => identify(withToken(token), SECRET)).toThrow(expect.objectContaining({ status: 401, message: 'token expired' }));
  });
});
