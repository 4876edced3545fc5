/**
 * Before a new instance listens where it serves, it sends itself likes and unlikes of videos that do
 * not exist (404: nothing is written), a new loopback connection each, AT_ONCE at a time, for at most
 * WARM_UP_MS, and logs their answers. A just-started API spent 2.4x a warm one's CPU per like until
 * V8 had compiled the path: a viral video's burst on a pod just deployed had p99 2.5-3.3 s, 1.2-1.6 s
 * after this (issue 49, docs/benchmarks.md). They stay out of /metrics, the logs, the video cache, traces.
 */
import { request, type Server } from 'node:http';
import { once, setMaxListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { Types } from 'mongoose';
import { logger } from '@feed/logger';
import { untracedPort } from '@feed/telemetry';

const AT_ONCE = 50;
/** A slow MongoDB makes each 404 wait its budget: at this bound every request still open is cut. */
const WARM_UP_MS = 5_000;

/** Listens on a free loopback port, sends `requests` requests, closes: the answers' counts by status (0: none, or cut). */
export async function warmUp(server: Server, requests: number, jwtSecret: string): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  if (requests === 0) return statuses;
  const started = performance.now();
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const { port } = server.address() as AddressInfo;
  const traceAgain = untracedPort(port);
  // 200 users: token verification is warmed too (a token is verified once, then cached).
  const tokens = Array.from({ length: Math.min(200, requests) }, (_, i) => `Bearer ${jwt.sign({ sub: `warm-up-${i}` }, jwtSecret, { expiresIn: 60 })}`);
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
    for (let i = sent++; i < requests && !cut.aborted; i = sent++) await send(i).then((status) => statuses.set(status, (statuses.get(status) ?? 0) + 1));
  };
  await Promise.all(Array.from({ length: AT_ONCE }, sender));
  traceAgain();
  await new Promise((resolve) => server.close(resolve).closeAllConnections()); // a cut client's request is not waited for
  logger.info('api warmed up', { ms: Math.round(performance.now() - started), answers: Object.fromEntries(statuses) });
  return statuses;
}
