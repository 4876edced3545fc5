/**
 * MongoDB connection through mongoose. The deployables always connect to `MONGO_URL`: the
 * embedded MongoDB-protocol server is development tooling (`tools/support/local-mongo.ts`), which
 * starts it and sets `MONGO_URL` before a deployable starts, so a production image cannot fall
 * back to an in-memory database.
 */
import mongoose, { type Connection } from 'mongoose';
import { ConfigError, type Config } from '@feed/config';

export interface MongoHandle {
  connection: Connection;
  close(): Promise<void>;
}

/** How long a command waits for a usable server before failing (the API then answers 503). */
const SERVER_SELECTION_MS = 2_000;
/** Server-selection windows the first connection gets (about 10 s in all). */
const FIRST_CONNECT_ATTEMPTS = 5;

export async function connectMongo(config: Pick<Config, 'mongoUrl'>): Promise<MongoHandle> {
  if (!config.mongoUrl) {
    throw new ConfigError('MONGO_URL is not set: give the MongoDB connection string (pnpm start / start:api / start:worker start a local embedded server when it is unset)');
  }
  // Fail a read within ~2 s when MongoDB is gone (the API answers 503) instead of hanging. The
  // first connection gets a few of those windows: a MongoDB slow to answer at start-up (busy, or
  // just failed over) is not a reason to exit.
  let connection: Connection | undefined;
  for (let attempt = 1; !connection; attempt++) {
    try {
      connection = await mongoose.createConnection(config.mongoUrl, { serverSelectionTimeoutMS: SERVER_SELECTION_MS }).asPromise();
    } catch (err) {
      if (attempt >= FIRST_CONNECT_ATTEMPTS || (err as Error).name !== 'MongooseServerSelectionError') throw err;
    }
  }
  return {
    connection,
    async close() {
      await connection.close();
    },
  };
}
