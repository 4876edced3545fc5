import net from 'node:net';
import type { Document } from 'bson';
import { CursorRegistry, runCommand, type CommandContext } from './commands';
import type { CommandError } from './errors';
import { FailCommandPoint } from './failpoint';
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
 * Production uses a real MongoDB: this keeps no data on disk and has no replication. The
 * `failCommand` fail point (configureFailPoint) stands in for an election's or a network's faults.
 */
export async function startEmbeddedMongo(options: EmbeddedMongoOptions = {}): Promise<EmbeddedMongo> {
  const host = options.host ?? '127.0.0.1';
  const store = new Store();
  const cursors = new CursorRegistry();
  const sockets = new Set<net.Socket>();
  let nextConnectionId = 1;

  const failCommand = new FailCommandPoint();
  const startedAt = Date.now();

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    const ctx: CommandContext = { store, connectionId: nextConnectionId++, connections: () => ({ current: sockets.size, totalCreated: nextConnectionId - 1 }), startedAt };
    let appName: string | undefined;
    // Chunks of a message not yet whole: joined once it is (joining at every chunk made a 16 MiB
    // message cost gigabytes of copying).
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    // Messages wait here while the fail point blocks this connection; other connections go on.
    const waiting: Buffer[] = [];
    let blocked = false;
    const answer = (message: Buffer): void => {
      const request = parseRequest(message);
      const name = Object.keys(request.command)[0];
      appName ??= (request.command.client as { application?: { name?: string } } | undefined)?.application?.name;
      const action = name === 'configureFailPoint' ? undefined : failCommand.take(name, appName);
      const reply = () => {
        if (action?.close) {
          socket.destroy();
          return;
        }
        ctx.messageBytes = message.length;
        const result = action?.error ?? (name === 'configureFailPoint' ? configure(request.command, request.db) : runCommand(request.command, request.db, ctx, cursors));
        if (!request.moreToCome) socket.write(encodeReply(request, result));
      };
      if (!action?.blockMs) return reply();
      blocked = true;
      setTimeout(() => {
        blocked = false;
        if (socket.destroyed) return;
        reply();
        pump();
      }, action.blockMs);
    };
    const configure = (command: Document, db: string) => {
      try {
        return failCommand.configure(command, db);
      } catch (err) {
        return (err as CommandError).toReply();
      }
    };
    const pump = () => {
      try {
        while (!blocked && !socket.destroyed && waiting.length > 0) answer(waiting.shift()!);
      } catch {
        // A frame we cannot parse leaves the stream unrecoverable: drop the connection.
        socket.destroy();
      }
    };
    socket.on('data', (chunk) => {
      try {
        pending.push(chunk);
        pendingBytes += chunk.length;
        const head = pending[0].length >= 4 ? pending[0] : Buffer.concat(pending);
        if (head.length >= 4 && pendingBytes < head.readInt32LE(0)) return;
        const { messages, rest } = takeMessages(pending.length === 1 ? chunk : Buffer.concat(pending));
        pending = rest.length > 0 ? [Buffer.from(rest)] : [];
        pendingBytes = rest.length;
        waiting.push(...messages);
        pump();
      } catch {
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
  // mongod's TTL monitor: a pass every ttlMonitorSleepSecs (setParameter can change it at any time).
  let lastTtlPass = Date.now();
  const ttl = setInterval(() => {
    if (Date.now() - lastTtlPass < store.ttlMonitorSleepSecs * 1000) return;
    lastTtlPass = Date.now();
    store.expire(lastTtlPass);
  }, 1000);
  ttl.unref();

  return {
    uri: `mongodb://${host}:${port}`,
    port,
    async stop() {
      clearInterval(sweeper);
      clearInterval(ttl);
      cursors.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
