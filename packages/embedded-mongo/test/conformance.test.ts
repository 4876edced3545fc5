/**
 * The project's mongoose usage, run against the embedded server — and against a real MongoDB
 * when MONGO_URL_CONFORMANCE is set, so that drift between the two shows up here.
 */
import mongoose, { Schema, type Connection } from 'mongoose';

const baseUri = process.env.MONGO_URL_CONFORMANCE ?? process.env.TEST_MONGO_URI!;

interface Item {
  name: string;
  group: string;
  n: number;
  at?: Date;
  tags?: string[];
}

const itemSchema = new Schema<Item>({
  name: { type: String, required: true, unique: true },
  group: { type: String, index: true },
  n: { type: Number, default: 0 },
  at: Date,
  tags: [String],
});

const pairSchema = new Schema({ userId: String, videoId: Schema.Types.ObjectId, counted: Boolean });
pairSchema.index({ userId: 1, videoId: 1 }, { unique: true });

let conn: Connection;

beforeAll(async () => {
  conn = await mongoose.createConnection(`${baseUri}/conformance_${process.pid}_${Date.now()}`).asPromise();
});

afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

describe('embedded MongoDB server with the real mongoose stack', () => {
  const Item = () => conn.models.Item ?? conn.model<Item>('Item', itemSchema);
  const Pair = () => conn.models.Pair ?? conn.model('Pair', pairSchema);

  beforeEach(async () => {
    await Item().init();
    await Item().deleteMany({});
  });

  it('when documents are created, then find with sort/limit/select/lean returns them in order', async () => {
    await Item().create({ name: 'b', group: 'x', n: 2 });
    await Item().insertMany([
      { name: 'a', group: 'x', n: 1 },
      { name: 'c', group: 'y', n: 3 },
    ]);
    const docs = await Item().find({ group: 'x' }).sort({ n: -1 }).limit(5).select({ name: 1 }).lean();
    expect(docs.map((d) => d.name)).toEqual(['b', 'a']);
    expect(docs[0]).not.toHaveProperty('n');
    expect(docs[0]._id).toBeInstanceOf(mongoose.Types.ObjectId);
    const one = await Item().findOne({ name: 'c' }).lean();
    expect(one?.n).toBe(3);
    expect(Object.keys(one!)[0]).toBe('_id');
  });

  it('when updateOne uses $inc with upsert, then it inserts once and increments after', async () => {
    const first = await Item().updateOne({ name: 'u' }, { $inc: { n: 5 }, $setOnInsert: { group: 'new' } }, { upsert: true });
    expect(first.upsertedCount).toBe(1);
    const second = await Item().updateOne({ name: 'u' }, { $inc: { n: 1 }, $setOnInsert: { group: 'ignored' } }, { upsert: true });
    expect(second.matchedCount).toBe(1);
    expect(second.modifiedCount).toBe(1);
    const doc = await Item().findOne({ name: 'u' }).lean();
    expect(doc).toMatchObject({ name: 'u', n: 6, group: 'new' });
  });

  it('when an update sets a value it already has, then nModified is 0', async () => {
    await Item().create({ name: 'same', n: 1 });
    const result = await Item().updateOne({ name: 'same' }, { $set: { n: 1 } });
    expect(result.matchedCount).toBe(1);
    expect(result.modifiedCount).toBe(0);
  });

  it('when a duplicate is inserted, then mongoose raises code 11000 with keyPattern and keyValue', async () => {
    await Item().create({ name: 'dup' });
    const err = await Item().create({ name: 'dup' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 11000, keyPattern: { name: 1 }, keyValue: { name: 'dup' } });
    expect(String((err as Error).message)).toMatch(/E11000 duplicate key error/);
    expect(await Item().countDocuments({ name: 'dup' })).toBe(1);
  });

  it('when a compound unique index is violated by an upsert or findOneAndUpdate, then 11000 is raised', async () => {
    await Pair().init();
    const videoId = new mongoose.Types.ObjectId();
    await Pair().create({ userId: 'u1', videoId, counted: false });
    await expect(Pair().create({ userId: 'u1', videoId })).rejects.toMatchObject({ code: 11000 });
    await Pair().create({ userId: 'u2', videoId });
    await expect(Pair().findOneAndUpdate({ userId: 'u2' }, { $set: { userId: 'u1' } })).rejects.toMatchObject({ code: 11000 });
    const claimed = await Pair().findOneAndUpdate({ userId: 'u1', videoId, counted: false }, { $set: { counted: true } }, { returnDocument: 'after' }).lean();
    expect(claimed).toMatchObject({ counted: true });
    const again = await Pair().findOneAndUpdate({ userId: 'u1', videoId, counted: false }, { $set: { counted: true } }, { returnDocument: 'after' }).lean();
    expect(again).toBeNull();
  });

  it('when a unique index is created over duplicated data, then creation fails with 11000', async () => {
    const raw = conn.collection(`raw_${Date.now()}`);
    await raw.insertMany([{ k: 1 }, { k: 1 }]);
    await expect(raw.createIndex({ k: 1 }, { unique: true })).rejects.toMatchObject({ code: 11000 });
  });

  it('when $inc targets a string, then the server answers TypeMismatch (14)', async () => {
    const raw = conn.collection(`raw_inc_${Date.now()}`);
    await raw.insertOne({ _id: 'x' as never, s: 'text' });
    await expect(raw.updateOne({ _id: 'x' as never }, { $inc: { s: 1 } })).rejects.toMatchObject({ code: 14 });
  });

  it('when bulkWrite mixes operations, then counts match', async () => {
    await Item().insertMany([{ name: 'k1' }, { name: 'k2' }]);
    const result = await Item().bulkWrite([
      { insertOne: { document: { name: 'k3' } } },
      { updateOne: { filter: { name: 'k1' }, update: { $set: { n: 9 } } } },
      { updateMany: { filter: { name: { $in: ['k2', 'k3'] } }, update: { $inc: { n: 1 } } } },
      { deleteOne: { filter: { name: 'k2' } } },
    ]);
    expect(result.insertedCount).toBe(1);
    expect(result.modifiedCount).toBe(3);
    expect(result.deletedCount).toBe(1);
    expect(await Item().countDocuments()).toBe(2);
  });

  it('when aggregating, then $match/$group/$sort work', async () => {
    await Item().insertMany([
      { name: 'g1', group: 'a', n: 1 },
      { name: 'g2', group: 'a', n: 2 },
      { name: 'g3', group: 'b', n: 5 },
    ]);
    const rows = await Item().aggregate([{ $match: { n: { $gte: 1 } } }, { $group: { _id: '$group', total: { $sum: '$n' } } }, { $sort: { _id: 1 } }]);
    expect(rows).toEqual([
      { _id: 'a', total: 3 },
      { _id: 'b', total: 5 },
    ]);
  });

  it('when 10,000 documents are read with a cursor, then every one arrives once, in order', async () => {
    await Item().insertMany(Array.from({ length: 10_000 }, (_, i) => ({ name: `c${i}`, n: i })), { lean: true });
    let count = 0;
    let last = -1;
    for await (const doc of Item().find({}).sort({ n: 1 }).lean().cursor({ batchSize: 500 })) {
      expect(doc.n).toBe(last + 1);
      last = doc.n;
      count++;
    }
    expect(count).toBe(10_000);
    const deleted = await Item().deleteMany({ n: { $lt: 5000 } });
    expect(deleted.deletedCount).toBe(5000);
    expect(await Item().estimatedDocumentCount()).toBe(5000);
  });

  it('when an unknown command is sent, then it answers CommandNotFound (59)', async () => {
    await expect(conn.db!.command({ definitelyNotACommand: 1 })).rejects.toMatchObject({ code: 59, codeName: 'CommandNotFound' });
  });

  it('when indexes are listed, then declared indexes are present', async () => {
    const indexes = await Item().listIndexes();
    expect(indexes.map((i) => i.name)).toEqual(expect.arrayContaining(['_id_', 'name_1', 'group_1']));
    expect(indexes.find((i) => i.name === 'name_1')?.unique).toBe(true);
  });
});

describe('embedded MongoDB server batches', () => {
  it('when a query returns more than 16 MiB without a batch size, then getMore splits it into batches that fit a message', async () => {
    const raw = conn.collection(`big_${Date.now()}`);
    const padding = 'x'.repeat(10_000);
    await raw.insertMany(Array.from({ length: 3000 }, (_, i) => ({ i, padding })));
    const docs = await raw.find({}).toArray();
    expect(docs).toHaveLength(3000);
    expect(docs[2999].i).toBe(2999);
  });
});

// Only a real MongoDB has a query planner: R19's indexes are checked there.
(process.env.MONGO_URL_CONFORMANCE ? describe : describe.skip)('R19 indexes on a real MongoDB', () => {
  it('when the build and new-pool queries are explained, then they use the status+newsType indexes', async () => {
    const { videoModel } = await import('@feed/storage');
    const videos = videoModel(conn);
    await videos.init();
    const plan = JSON.stringify(await videos.find({ status: 'approved', newsType: 'short' }).sort({ recommendScore: -1, reviewAt: -1 }).explain());
    expect(plan).toContain('status_1_newsType_1_recommendScore_-1_reviewAt_-1');
    const newPool = JSON.stringify(await videos.find({ status: 'approved', newsType: 'short', reviewAt: { $gte: new Date(Date.now() - 86_400_000) } }).explain());
    expect(newPool).toContain('IXSCAN');
  });
});
