/**
 * `configureFailPoint` with `failCommand`, as a mongod started with test commands enabled answers
 * it; the same tests run against a real server through TEST_MONGO_URL (alone: a fail point holds
 * for every client of the server).
 */
import type { Document } from 'bson';
import mongoose from 'mongoose';
import { onRealMongo, testMongoUrl } from '../../../test/support/mongo';
import { startEmbeddedMongo, type EmbeddedMongo } from '../src/server';

let server: EmbeddedMongo | undefined;
const { MongoClient } = mongoose.mongo;
let client: InstanceType<typeof MongoClient>;
let probe: InstanceType<typeof MongoClient>;
const admin = () => probe.db('admin');
const failCommand = (mode: unknown, data: Document = {}) => admin().command({ configureFailPoint: 'failCommand', mode, data });

beforeAll(async () => {
  // A fail point holds for the whole server: the embedded one of this file alone, so that the
  // suite's other files on the shared server never see it. (A real server is shared: run alone.)
  server = onRealMongo ? undefined : await startEmbeddedMongo();
  const url = server ? `${server.uri}/failpoint` : testMongoUrl('failpoint');
  // Retries off: each test sees what the server answers to one command.
  client = await new MongoClient(url, { retryReads: false, retryWrites: false }).connect();
  probe = await new MongoClient(url).connect();
});

afterEach(() => failCommand('off'));

afterAll(async () => {
  await client.db().dropDatabase();
  await client.close();
  await probe.close();
  await server?.stop();
});

const items = () => client.db().collection('items');

describe('failCommand fail point', () => {
  it('when alwaysOn names insert and find with errorCode 10107 and labels, then both fail with them until off; other commands run', async () => {
    await items().insertOne({ n: 1 });
    await failCommand('alwaysOn', { failCommands: ['insert', 'find'], errorCode: 10107, errorLabels: ['RetryableWriteError'] });
    for (let i = 0; i < 2; i++) {
      const error = await items().insertOne({ n: 2 }).catch((err: unknown) => err);
      expect(error).toMatchObject({ code: 10107, codeName: 'NotWritablePrimary' });
      expect((error as { errorLabels?: string[] }).errorLabels ?? [...((error as { errorLabelSet?: Set<string> }).errorLabelSet ?? [])]).toContain('RetryableWriteError');
      await expect(items().findOne({})).rejects.toMatchObject({ code: 10107 });
    }
    expect(await items().countDocuments()).toBe(1); // aggregate is not named
    await failCommand('off');
    await items().insertOne({ n: 3 });
    expect(await items().countDocuments()).toBe(2);
  });

  it('when mode is {times: 2}, then exactly the next two named commands fail', async () => {
    await failCommand({ times: 2 }, { failCommands: ['update'], errorCode: 11602 });
    await expect(items().updateOne({}, { $set: { a: 1 } })).rejects.toMatchObject({ code: 11602 });
    await expect(items().updateOne({}, { $set: { a: 1 } })).rejects.toMatchObject({ code: 11602 });
    await items().updateOne({}, { $set: { a: 1 } });
  });

  it('when mode is {skip: 1}, then the first named command runs and the later ones fail', async () => {
    await failCommand({ skip: 1 }, { failCommands: ['count'], errorCode: 10107 });
    await client.db().command({ count: 'items' });
    await expect(client.db().command({ count: 'items' })).rejects.toMatchObject({ code: 10107 });
  });

  it('when closeConnection is set, then the command gets no answer and the driver sees a network error; the next one runs', async () => {
    await items().insertOne({ closed: false });
    await failCommand({ times: 1 }, { failCommands: ['find'], closeConnection: true });
    await expect(items().findOne({})).rejects.toMatchObject({ name: expect.stringMatching(/MongoNetworkError|MongoServerSelectionError|MongoPoolClearedError/) });
    expect(await items().findOne({ closed: false })).not.toBeNull();
  });

  it('when blockConnection is set, then the named command answers after blockTimeMS (with its errorCode if any) while other connections go on', async () => {
    await failCommand({ times: 1 }, { failCommands: ['find'], blockConnection: true, blockTimeMS: 700 });
    const started = Date.now();
    const blocked = items().findOne({});
    // Another client's connection is not blocked.
    await probe.db(client.db().databaseName).collection('items').countDocuments();
    expect(Date.now() - started).toBeLessThan(600);
    await blocked;
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    await failCommand({ times: 1 }, { failCommands: ['find'], blockConnection: true, blockTimeMS: 300, errorCode: 10107 });
    await expect(items().findOne({})).rejects.toMatchObject({ code: 10107 });
  });

  // Jest's realm keeps the driver from sending its client metadata, so only the other half is seen here.
  it('when appName names another client, then this one runs', async () => {
    await failCommand('alwaysOn', { failCommands: ['find'], errorCode: 10107, appName: 'someone-else' });
    await items().findOne({});
  });

  it('when configureFailPoint is sent to a database other than admin, then it is refused', async () => {
    await expect(client.db().command({ configureFailPoint: 'failCommand', mode: 'off' })).rejects.toMatchObject({ ok: 0 });
  });
});
