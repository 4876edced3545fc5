/**
 * connectMongo (mongo.ts): an instance listens with its MongoDB pool grown to
 * MONGO_MIN_POOL_SIZE (issue 49: a burst on an empty pool waited behind its growth).
 */
import { EventEmitter } from 'node:events';
import { connectMongo, type MongoHandle } from '../src';
import { poolGrown } from '../src/mongo';
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

it('when the members of a replica set each open connections, then the pool counts as grown only once one member holds MONGO_MIN_POOL_SIZE, not the sum over members', async () => {
  const client = new EventEmitter();
  let grown: boolean | undefined;
  void poolGrown(client, 20, 5_000).then((value) => (grown = value));
  const members = ['db-0:27017', 'db-1:27017', 'db-2:27017'];
  // The driver grows every member's pool 2 at a time: 21 ready in all, 7 per member.
  for (let i = 0; i < 7; i++) for (const address of members) client.emit('connectionReady', { address });
  await new Promise((resolve) => setImmediate(resolve));
  expect(grown).toBeUndefined();
  client.emit('connectionClosed', { address: members[0] });
  for (let i = 0; i < 13; i++) client.emit('connectionReady', { address: members[0] });
  await new Promise((resolve) => setImmediate(resolve));
  expect(grown).toBeUndefined();
  client.emit('connectionReady', { address: members[0] });
  await new Promise((resolve) => setImmediate(resolve));
  expect(grown).toBe(true);
});
