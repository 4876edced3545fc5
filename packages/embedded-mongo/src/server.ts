import net from 'node:net';
import { CursorRegistry, runCommand } from './commands';
import { Store } from './store';
import { encodeReply, parseRequest, takeMessages } from './wire';

export interface EmbeddedMongo {
  /** A `mongodb://` URI for the driver (no database: callers append their own). */
  uri: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedMongoOptions {
  /** 0 or absent = any free port. */
  port?: number;
  host?: string;
}

/**
 * Starts an in-memory server that speaks the MongoDB wire protocol, for local runs and tests.
 * Production uses a real MongoDB: this keeps no data on disk and has no replication.
 */
export async function startEmbeddedMongo(options: EmbeddedMongoOptions = {}): Promise<EmbeddedMongo> {
  const host = options.host ?? '127.0.0.1';
  const store = new Store();
  const cursors = new CursorRegistry();
  const sockets = new Set<net.Socket>();
  let nextConnectionId = 1;

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    const ctx = { store, connectionId: nextConnectionId++ };
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      try {
        const { messages, rest } = takeMessages(pending.length ? Buffer.concat([pending, chunk]) : chunk);
        pending = Buffer.from(rest);
        for (const message of messages) {
          const request = parseRequest(message);
          const reply = runCommand(request.command, request.db, ctx, cursors);
          if (!request.moreToCome) socket.write(encodeReply(request, reply));
        }
      } catch {
        // A frame we cannot parse leaves the stream unrecoverable: drop the connection.
        socket.destroy();
      }
    });
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  const sweeper = setInterval(() => cursors.sweepIdle(), 60_000);
  sweeper.unref();

  return {
    uri: `mongodb://${host}:${port}`,
    port,
    async stop() {
      clearInterval(sweeper);
      cursors.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
