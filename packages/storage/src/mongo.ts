/**
 * MongoDB connection through mongoose. With MONGO_URL unset the embedded MongoDB-protocol server
 * is started on EMBEDDED_MONGO_PORT — or reused when another local process (api or worker)
 * already started it there — so `pnpm start:api` and `pnpm start:worker` share one database.
 */
import mongoose, { type Connection } from 'mongoose';
import type { Config } from '@feed/config';
import { startEmbeddedMongo, type EmbeddedMongo } from '@feed/embedded-mongo';
import { logger } from '@feed/logger';

export const EMBEDDED_DATABASE = 'shortfeed';

export interface MongoHandle {
  connection: Connection;
  /** Set when this process started the embedded server. */
  embedded?: EmbeddedMongo;
  close(): Promise<void>;
}

async function startOrReuseEmbedded(port: number): Promise<{ uri: string; embedded?: EmbeddedMongo }> {
  try {
    const embedded = await startEmbeddedMongo({ port });
    logger.info('embedded mongodb started', { uri: embedded.uri });
    return { uri: embedded.uri, embedded };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    logger.info('embedded mongodb already running, reusing it', { port });
    return { uri: `mongodb://127.0.0.1:${port}` };
  }
}

export async function connectMongo(config: Pick<Config, 'mongoUrl' | 'embeddedMongoPort'>): Promise<MongoHandle> {
  let uri = config.mongoUrl;
  let embedded: EmbeddedMongo | undefined;
  if (!uri) {
    const started = await startOrReuseEmbedded(config.embeddedMongoPort);
    uri = `${started.uri}/${EMBEDDED_DATABASE}`;
    embedded = started.embedded;
  }
  // Fail a read within ~2 s when MongoDB is gone (the API answers 503) instead of hanging.
  const connection = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 2000 }).asPromise();
  return {
    connection,
    embedded,
    async close() {
      await connection.close();
      await embedded?.stop();
    },
  };
}
