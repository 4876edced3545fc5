/**
 * connectMongo (mongo.ts): an instance listens with its MongoDB pool grown to
 * MONGO_MIN_POOL_SIZE (issue 49: a burst on an empty pool waited behind its growth).
 */
import { connectMongo, type MongoHandle } from '../src';
import { testMongoUrl } from '../../../test/support/mongo';

/** Connections the driver's pool holds now (driver internals: there is no public count). */
function poolSize(handle: MongoHandle): number {
  const topology = Reflect.get(handle.connection.getClient(), 'topology') as { s: { servers: Map<string, { pool: { totalConnectionCount: number } }> } };
  return [...topology.s.servers.values()].reduce((sum, server) => sum + server.pool.totalConnectionCount, 0);
}

it('when MONGO_MIN_POOL_SIZE is 6, then connectMongo returns with 6 connections open; with 0, it does not wait for any', async () => {
  const grown = await connectMongo({ mongoUrl: testMongoUrl('mongo-pool'), mongoMinPoolSize: 6, mongoMaxPoolSize: 8 });
  try {
    expect(poolSize(grown)).toBeGreaterThanOrEqual(6);
  } finally {
    await grown.close();
  }
  const lazy = await connectMongo({ mongoUrl: testMongoUrl('mongo-pool'), mongoMinPoolSize: 0, mongoMaxPoolSize: 8 });
  try {
    expect(poolSize(lazy)).toBeLessThan(6);
  } finally {
    await lazy.close();
  }
});
