/**
 * Before a new instance listens where it serves, it sends itself likes and unlikes of videos that
 * do not exist (404: nothing is written), a new loopback connection each, AT_ONCE at a time, for at
 * most WARM_UP_MS. A just-started API spent 2.4x a warm one's CPU per like until V8 had compiled
 * the path, and a viral video's burst on a pod just deployed met that cold code: p99 2.4-3.3 s,
 * 1.3-1.4 s after this warm-up (issue 49, docs/benchmarks.md). The caller keeps it out of /metrics.
 */
import { request, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { Types } from 'mongoose';
import { untracedPort, withoutTraces } from '@feed/telemetry';

const AT_ONCE = 50;
/** A slow MongoDB makes each 404 wait its budget: the start waits no longer than this. */
const WARM_UP_MS = 5_000;

/** Listens on a free loopback port, sends `requests` requests, closes: the answers' counts by status. */
export async function warmUp(server: Server, requests: number, jwtSecret: string): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  if (requests === 0) return statuses;
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const { port } = server.address() as AddressInfo;
  // Traces on (D5), each request would be a trace of its own, with a 404 exception: none, either side.
  const traceAgain = untracedPort(port);
  const headers = { Authorization: `Bearer ${jwt.sign({ sub: 'warm-up' }, jwtSecret, { expiresIn: 60 })}`, 'Content-Type': 'application/json' };
  const until = performance.now() + WARM_UP_MS;
  // The bound is the whole warm-up's: at `until` every request still open is cut (an answer that
  // comes slowly, or stops halfway, no longer holds the start for another round or for ever).
  const open = new Set<ReturnType<typeof request>>();
  const cut = setTimeout(() => open.forEach((req) => req.destroy()), WARM_UP_MS);
  const send = (i: number) =>
    new Promise<number>((resolve) => {
      let answered = false;
      const req = withoutTraces(() => request({ port, host: '127.0.0.1', path: `/api/app/vid/${i % 2 ? 'unlike' : 'like'}`, method: 'POST', headers, agent: false }, (res) => {
        answered = true;
        // Whole, its status; cut halfway, no answer.
        res.once('error', () => resolve(0)).once('close', () => resolve(res.complete ? res.statusCode! : 0));
        res.resume();
      }));
      open.add(req);
      req.once('error', () => resolve(0)).once('close', () => {
        open.delete(req);
        if (!answered) resolve(0);
      });
      // A new ObjectId names no video (made here, now, of this process's random bytes): a fixed id
      // might (ffff...00000000 liked by "warm-up" at every start, its counter and D7 with it).
      req.end(JSON.stringify({ vid: new Types.ObjectId().toHexString() }));
    });
  let sent = 0;
  const sender = async () => {
    for (let i = sent++; i < requests && performance.now() < until; i = sent++) {
      const status = await send(i);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, sender)).finally(() => {
    clearTimeout(cut);
    traceAgain();
    return new Promise((resolve) => {
      server.close(resolve);
      // Connections whose client was cut: no request of theirs is waited for.
      server.closeAllConnections();
    });
  });
  return statuses;
}
