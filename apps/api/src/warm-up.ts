/**
 * Before a new instance listens where it serves, it sends itself likes and unlikes of videos that
 * do not exist (404: nothing is written), a new loopback connection each, AT_ONCE at a time, for at
 * most WARM_UP_MS. A just-started API spent 2.4x a warm one's CPU per like until V8 had compiled
 * the path, and a viral video's burst on a pod just deployed met that cold code: p99 2.4-3.3 s,
 * 1.3-1.4 s after this warm-up (issue 49, docs/benchmarks.md). The app keeps these requests out of
 * /metrics, the logs and the video cache; they make no trace.
 */
import { request, type Server } from 'node:http';
import { once, setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { Types } from 'mongoose';
import { untracedPort } from '@feed/telemetry';

const AT_ONCE = 50;
/** A slow MongoDB makes each 404 wait its budget: at this bound every request still open is cut. */
const WARM_UP_MS = 5_000;
/** Distinct users, so that token verification is warmed too (a token is verified once, then cached). */
const USERS = 200;

/** Listens on a free loopback port, sends `requests` requests, closes: the answers' counts by status (0: none, or cut). */
export async function warmUp(server: Server, requests: number, jwtSecret: string): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  if (requests === 0) return statuses;
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const { port } = server.address() as AddressInfo;
  const traceAgain = untracedPort(port);
  const tokens = Array.from({ length: Math.min(USERS, requests) }, (_, i) => `Bearer ${jwt.sign({ sub: `warm-up-${i}` }, jwtSecret, { expiresIn: 60 })}`);
  const cut = AbortSignal.timeout(WARM_UP_MS);
  setMaxListeners(AT_ONCE + 1, cut); // one listener per request open
  const send = (i: number) =>
    new Promise<number>((resolve) => {
      const headers = { Authorization: tokens[i % tokens.length], 'Content-Type': 'application/json' };
      const options = { port, host: '127.0.0.1', path: `/api/app/vid/${i % 2 ? 'unlike' : 'like'}`, method: 'POST', headers, agent: false, signal: cut };
      // Whole, its status; cut (before or halfway through its answer), none.
      const req = request(options, (res) => res.once('close', () => resolve(res.complete ? res.statusCode! : 0)).resume());
      // A new ObjectId names no video; a fixed id might (a like by the warm-up at every start).
      req.once('error', () => resolve(0)).end(JSON.stringify({ vid: new Types.ObjectId().toHexString() }));
    });
  let sent = 0;
  const sender = async () => {
    for (let i = sent++; i < requests && !cut.aborted; i = sent++) {
      const status = await send(i);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, sender));
  traceAgain();
  // Closing every connection: a cut client's request is not waited for.
  await new Promise((resolve) => server.close(resolve).closeAllConnections());
  return statuses;
}
