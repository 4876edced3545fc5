/**
 * TCP proxies on 127.0.0.1 in front of a real server, for fault tests: requests reach the target
 * at once; its answers come back throttled (a slow network to MongoDB, so that a real build lasts
 * long enough to be signalled) or late (the target acts in time, its caller learns of it late).
 */
import net from 'node:net';

export interface ThrottledProxy {
  port: number;
  close(): Promise<void>;
}

export interface DelayingProxy extends ThrottledProxy {
  /** Holds each answer from the target this long before passing it on (0: at once). */
  replyDelayMs: number;
}

/** A proxy whose answers from the target go through `forward` (which writes them to the client). */
async function proxy(target: { host: string; port: number }, forward: (chunk: Buffer, client: net.Socket, upstream: net.Socket) => void, sent?: (chunk: Buffer, client: net.Socket) => void): Promise<ThrottledProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    if (sent) client.on('data', (chunk: Buffer) => sent(chunk, client));
    upstream.on('data', (chunk: Buffer) => forward(chunk, client, upstream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Answers flow at most `bytesPerSecond`: each chunk holds the next back for as long as the rate allows. */
export function throttledProxy(target: { host: string; port: number }, bytesPerSecond: number): Promise<ThrottledProxy> {
  return proxy(target, (chunk, client, upstream) => {
    client.write(chunk);
    upstream.pause();
    setTimeout(() => upstream.resume(), (chunk.length / bytesPerSecond) * 1000);
  });
}

/**
 * Answers are held `replyDelayMs` (settable while it runs), in their order: an answer never
 * overtakes one held longer before it (a lowered delay would hand a RESP client the wrong replies).
 */
export async function delayingProxy(target: { host: string; port: number }, holdOnly?: (sent: Buffer) => boolean): Promise<DelayingProxy> {
  const settings = { replyDelayMs: 0 };
  // With `holdOnly`, only the answers on connections whose client once sent a matching chunk are held.
  const held = new WeakSet<net.Socket>();
  const sent = holdOnly && ((chunk: Buffer, client: net.Socket) => void (holdOnly(chunk) && held.add(client)));
  // One chain per client: a chunk is written only after the one before it. Timers of different
  // durations aimed at the same millisecond may fire out of order, and a reordered reply stream
  // desynchronises the client's parser (a claim whose answer never came, seen under load).
  const written = new WeakMap<net.Socket, Promise<void>>();
  const running = await proxy(target, (chunk, client) => {
    const due = Date.now() + (!holdOnly || held.has(client) ? settings.replyDelayMs : 0);
    const previous = written.get(client) ?? Promise.resolve();
    written.set(
      client,
      previous
        .then(() => (due > Date.now() ? new Promise<void>((resolve) => setTimeout(resolve, due - Date.now())) : undefined))
        .then(() => void client.write(chunk)),
    );
  }, sent || undefined);
  return Object.assign(settings, running);
}
