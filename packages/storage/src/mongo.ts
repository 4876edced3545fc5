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

export async function connectMongo(config: Pick<Config, 'mongoUrl'>): Promise<MongoHandle> {
  if (!config.mongoUrl) {
    throw new ConfigError('MONGO_URL is not set: give the MongoDB connection string (pnpm start / start:api / start:worker start a local embedded server when it is unset)');
  }
  // Fail a read within ~2 s when MongoDB is gone (the API answers 503) instead of hanging.
  const connection = await mongoose.createConnection(config.mongoUrl, { serverSelectionTimeoutMS: 2000 }).asPromise();
  return {
    connection,
    async close() {
      await connection.close();
    },
  };
}
