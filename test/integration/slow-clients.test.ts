/**
 * SPEC C: slow clients are bounded. The API's app behind the deployables' server
 * (createHttpServer) with short bounds: a client trickling its headers, or its body, gets 408
 * once its bound has passed while other requests keep being served; connections past the limit
 * are refused.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createHttpServer, type ServerLimits } from '@feed/http';
import { useTestServices } from '../support/services';
import { testApi } from '../support/api';

const s = useTestServices('slow-clients');
const LIMITS: ServerLimits = { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, maxConnections: 50 };

let server: Server;
let port: number;
const sockets: net.Socket[] = [];

async function serve(limits: ServerLimits): Promise<void> {
  server = createHttpServer(testApi(s).app, limits);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
}

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A raw connection that records what the server sends and when it closes. */
async function connect(): Promise<{ socket: net.Socket; received: () => string; closed: () => boolean }> {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  let data = '';
  let closed = false;
  socket.on('data', (chunk) => (data += chunk.toString('latin1')));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, received: () => data, closed: () => closed };
}

/** Polls `check` until it holds or `ms` pass. */
async function waitFor(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Writes `chunk` every `everyMs` until the connection closes (a client that never finishes). */
function trickle(socket: net.Socket, chunk: () => string, everyMs: number): void {
  const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(chunk())), everyMs);
  socket.once('close', () => clearInterval(timer));
}

const healthy = async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status;

describe('slow clients (SPEC C)', () => {
  it('when a client trickles its headers, then it gets 408 after the headers bound, and others are served meanwhile', async () => {
    await serve(LIMITS);
    const started = Date.now();
    const slow = await connect();
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    let line = 0;
    trickle(slow.socket, () => `X-Slow-${line++}: 1\r\n`, 100);
    expect(await healthy()).toBe(200);
    await waitFor(() => slow.received().startsWith('HTTP/1.1 408'), 10 * LIMITS.headersTimeoutMs, 'a 408 for the trickled headers');
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.headersTimeoutMs);
    expect(await healthy()).toBe(200);
  });

  it('when a client trickles its body, then it gets 408 after the request bound, and others are served meanwhile', async () => {
    await serve(LIMITS);
    const started = Date.now();
    const slow = await connect();
    slow.socket.write('POST /api/app/vid/view HTTP/1.1\r\nHost: localhost\r\nX-Device-Id: slow-device-1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
    trickle(slow.socket, () => ' ', 100);
    expect(await healthy()).toBe(200);
    await waitFor(() => slow.received().startsWith('HTTP/1.1 408'), 10 * LIMITS.requestTimeoutMs, 'a 408 for the trickled body');
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs);
    expect(await healthy()).toBe(200);
  });

  it('when the connections limit is reached, then a further connection is refused, and served again once one closes', async () => {
    await serve({ ...LIMITS, maxConnections: 3 });
    const held = [await connect(), await connect(), await connect()];
    // Each held connection is counted once the server has taken it (it answers a request on it).
    for (const { socket, received } of held) {
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await waitFor(() => received().startsWith('HTTP/1.1 200'), 10_000, 'an answer on a held connection');
    }
    const extra = await connect();
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await waitFor(extra.closed, 10_000, 'the connection past the limit closed');
    expect(extra.received()).toBe('');
    held[0].socket.destroy();
    await waitFor(held[0].closed, 10_000, 'a held connection closed');
    const next = await connect();
    next.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    await waitFor(() => next.received().startsWith('HTTP/1.1 200'), 10_000, 'an answer once below the limit');
  });

  it('when idle keep-alive connections hold the limit, then they yield: a refused client is served on its retry', async () => {
    await serve({ ...LIMITS, maxConnections: 3 });
    // As the API's main.ts has it (longer than a load balancer's idle timeout), so no idle one lapses here.
    server.keepAliveTimeout = 65_000;
    // Each answered once and then idle (keep-alive): they do nothing but hold a slot.
    const idle = [await connect(), await connect(), await connect()];
    for (const { socket, received } of idle) {
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await waitFor(() => received().startsWith('HTTP/1.1 200'), 10_000, 'an answer on an idle connection');
    }
    const refused = await connect();
    await waitFor(refused.closed, 10_000, 'the connection past the limit closed');
    await waitFor(() => idle.every((c) => c.closed()), 10_000, 'the idle connections closed to make room');
    const retry = await connect();
    retry.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    await waitFor(() => retry.received().startsWith('HTTP/1.1 200'), 10_000, 'an answer on the retry');
  });
});
