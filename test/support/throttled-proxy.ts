/**
 * A TCP proxy on 127.0.0.1 whose answers from the target flow at most `bytesPerSecond`: a slow
 * network to MongoDB, so that a real build over real data lasts long enough to be signalled.
 */
import net from 'node:net';

export interface ThrottledProxy {
  port: number;
  close(): Promise<void>;
}

export async function throttledProxy(target: { host: string; port: number }, bytesPerSecond: number): Promise<ThrottledProxy> {
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
    // Each chunk from the target holds the next one back for as long as the rate allows.
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      upstream.pause();
      setTimeout(() => upstream.resume(), (chunk.length / bytesPerSecond) * 1000);
    });
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

export interface DelayingProxy extends ThrottledProxy {
  /** Holds each answer from the target this long before passing it on (0: at once). */
  replyDelayMs: number;
}

/**
 * A TCP proxy whose requests reach the target at once and whose answers come back late: the
 * target acts in time, its caller learns of it only after `replyDelayMs` (a busy or distant client).
 */
export async function delayingProxy(target: { host: string; port: number }): Promise<DelayingProxy> {
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
    upstream.on('data', (chunk: Buffer) => {
      if (proxy.replyDelayMs === 0) client.write(chunk);
      else setTimeout(() => client.write(chunk), proxy.replyDelayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: DelayingProxy = {
    port: (server.address() as net.AddressInfo).port,
    replyDelayMs: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
