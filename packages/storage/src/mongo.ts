/**
 * MongoDB through mongoose, always at `MONGO_URL`: the embedded server is development tooling
 * (tools/support/local-mongo.ts sets the URL), so a production image cannot fall back to memory.
 */
import mongoose, { type Connection } from 'mongoose';
import { ConfigError, type Config } from '@feed/config';
import { logger } from '@feed/logger';

export interface MongoHandle {
  connection: Connection;
  close(): Promise<void>;
}

/** How long a command waits for a usable server before failing (the API then answers 503). */
const SERVER_SELECTION_MS = 2_000;
/** Server-selection windows the first connection gets (about 10 s in all). */
const FIRST_CONNECT_ATTEMPTS = 5;

/** How long a start waits for MONGO_MIN_POOL_SIZE connections before it goes on with fewer. */
const POOL_GROWTH_MS = 10_000;

/** The connection events `poolGrown` listens to (a MongoClient's, or a test's emitter). */
interface PoolEvents {
  on(event: 'connectionReady' | 'connectionClosed', listener: (event: { address: string }) => void): unknown;
  off(event: 'connectionReady' | 'connectionClosed', listener: (event: { address: string }) => void): unknown;
}

/** Resolves once one server's pool holds `size` (or after `ms`): the driver opens 2 at a time, and a burst queued on an empty pool. */
export function poolGrown(client: PoolEvents, size: number, ms: number): Promise<boolean> {
  const open = new Map<string, number>();
  return new Promise((resolve) => {
    const done = (grown: boolean) => {
      clearTimeout(timer);
      client.off('connectionReady', ready);
      client.off('connectionClosed', closed);
      resolve(grown);
    };
    const count = (address: string, by: number) => open.set(address, (open.get(address) ?? 0) + by).get(address) ?? 0;
    const ready = (event: { address: string }) => count(event.address, 1) >= size && done(true);
    const closed = (event: { address: string }) => void count(event.address, -1);
    const timer = setTimeout(() => done(false), ms);
    client.on('connectionReady', ready);
    client.on('connectionClosed', closed);
    if (size === 0) done(true);
  });
}

export async function connectMongo(config: Pick<Config, 'mongoUrl'> & Partial<Pick<Config, 'mongoMinPoolSize' | 'mongoMaxPoolSize'>>): Promise<MongoHandle> {
  if (!config.mongoUrl) {
    throw new ConfigError('MONGO_URL is not set: give the MongoDB connection string (pnpm start / start:api / start:worker start a local embedded server when it is unset)');
  }
  // Fail a read within ~2 s when MongoDB is gone (a 503), not hang; the first connection gets a few
  // such windows (a MongoDB busy or failing over at start-up is no reason to exit).
  const { mongoMinPoolSize: minPoolSize = 0, mongoMaxPoolSize: maxPoolSize = 100 } = config;
  let connection: Connection | undefined;
  let grown: Promise<boolean> = Promise.resolve(true);
  for (let attempt = 1; !connection; attempt++) {
    try {
      const opening = mongoose.createConnection(config.mongoUrl, { serverSelectionTimeoutMS: SERVER_SELECTION_MS, minPoolSize, maxPoolSize });
      grown = poolGrown(opening.getClient(), minPoolSize, POOL_GROWTH_MS);
      connection = await opening.asPromise();
    } catch (err) {
      if (attempt >= FIRST_CONNECT_ATTEMPTS || (err as Error).name !== 'MongooseServerSelectionError') throw err;
    }
  }
  // Not fatal: a MongoDB slow to accept connections serves with fewer (the driver keeps growing the pool).
  if (!(await grown)) logger.warn('MongoDB pool not grown to MONGO_MIN_POOL_SIZE at start', { minPoolSize, waitedMs: POOL_GROWTH_MS });
  return {
    connection,
    async close() {
      await connection.close();
    },
  };
}
