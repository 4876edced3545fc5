/**
 * The project's mongoose usage, run against the embedded server, and against a real MongoDB
 * when the suite runs with TEST_MONGO_URL, so that drift between the two shows up here.
 */
import mongoose, { Schema, type Connection } from 'mongoose';
import { onRealMongo, testMongoUrl } from '../../../test/support/mongo';

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
  conn = await mongoose.createConnection(testMongoUrl('conformance')).asPromise();
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
    // The message names the document as MongoDB does.
    const { insertedId } = await raw.insertOne({ s: 'text' });
    await expect(raw.updateOne({ _id: insertedId }, { $inc: { s: 1 } })).rejects.toThrow(`ObjectId('${insertedId.toHexString()}')`);
  });

  it('when $set or $inc names a field below a value that is no document (a number, null), then PathNotViable (28) and nothing changes; below a missing one, it is created', async () => {
    const raw = conn.collection(`raw_path_${Date.now()}`);
    const { insertedId } = await raw.insertOne({ n: 5, none: null, sub: {} });
    await expect(raw.updateOne({ _id: insertedId }, { $set: { 'n.a': 1 } })).rejects.toMatchObject({ code: 28 });
    await expect(raw.updateOne({ _id: insertedId }, { $set: { 'none.a.b': 1 }, $inc: { c: 1 } })).rejects.toMatchObject({ code: 28 });
    await expect(raw.updateOne({ _id: insertedId }, { $inc: { 'n.a': 1 } })).rejects.toThrow("Cannot create field 'a' in element {n: 5}");
    await raw.updateOne({ _id: insertedId }, { $set: { 'sub.a.b': 1, 'new.c': 2 } });
    expect(await raw.findOne({ _id: insertedId }, { projection: { _id: 0 } })).toEqual({ n: 5, none: null, sub: { a: { b: 1 } }, new: { c: 2 } });
  });

  it('when $set names a field below an array by a name that is no index, then PathNotViable (28) and nothing changes; by an index, the array is padded', async () => {
    const raw = conn.collection(`raw_path_array_${Date.now()}`);
    const { insertedId } = await raw.insertOne({ empty: [], docs: [{ x: 1 }], nums: [5] });
    await expect(raw.updateOne({ _id: insertedId }, { $set: { 'empty.a': 1 } })).rejects.toMatchObject({ code: 28 });
    await expect(raw.updateOne({ _id: insertedId }, { $set: { 'docs.a': 1 } })).rejects.toMatchObject({ code: 28 });
    await expect(raw.updateOne({ _id: insertedId }, { $set: { 'nums.0.a': 1 } })).rejects.toMatchObject({ code: 28 });
    await raw.updateOne({ _id: insertedId }, { $set: { 'empty.1': 2, 'docs.0.y': 2 } });
    expect(await raw.findOne({ _id: insertedId }, { projection: { _id: 0 } })).toEqual({ empty: [null, 2], docs: [{ x: 1, y: 2 }], nums: [5] });
  });

  it('when an upsert inserts with $setOnInsert below a value its filter gave (k: 5), then PathNotViable (28) and nothing is inserted; an update that matches ignores it', async () => {
    const raw = conn.collection(`raw_path_insert_${Date.now()}`);
    await expect(raw.updateOne({ k: 5 }, { $setOnInsert: { 'k.a': 1 } }, { upsert: true })).rejects.toMatchObject({ code: 28 });
    expect(await raw.countDocuments({})).toBe(0);
    await raw.insertOne({ k: 5 });
    await raw.updateOne({ k: 5 }, { $setOnInsert: { 'k.a': 1 } }, { upsert: true });
    expect(await raw.findOne({}, { projection: { _id: 0 } })).toEqual({ k: 5 });
  });

  it('when $inc targets null, then TypeMismatch (14); an Int64 or a Decimal128 is added to by value (a Decimal128 stays one)', async () => {
    const raw = conn.collection(`raw_inc_types_${Date.now()}`);
    const { insertedId } = await raw.insertOne({ none: null, long: mongoose.mongo.Long.fromNumber(2 ** 40), decimal: mongoose.Types.Decimal128.fromString('7') });
    await expect(raw.updateOne({ _id: insertedId }, { $inc: { none: 1 } })).rejects.toMatchObject({ code: 14 });
    await raw.updateOne({ _id: insertedId }, { $inc: { long: 1, decimal: -2 } });
    const doc = await raw.findOne({ _id: insertedId });
    expect(String(doc?.long)).toBe(String(2 ** 40 + 1));
    expect(doc?.decimal).toBeInstanceOf(mongoose.Types.Decimal128);
    expect(Number(String(doc?.decimal))).toBe(5);
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
    // 30 MB through the wire twice: 8-18 s on a loaded 2-core machine, past Jest's default bound.
  }, 90_000);
});

// Written from the MongoDB manual's documented behaviour (serverStatus, partial and sparse unique
// indexes, listIndexes, updates of _id, unordered bulk writes), checked through mongoose.
describe('embedded MongoDB server: documented behaviours mongoose relies on', () => {
  const Item = () => conn.models.Item ?? conn.model<Item>('Item', itemSchema);

  beforeEach(async () => {
    await Item().init();
    await Item().deleteMany({});
  });

  it('when serverStatus is run, then it answers with the documented top-level fields', async () => {
    const status = await conn.db!.admin().serverStatus();
    expect(status.ok).toBe(1);
    expect(typeof status.version).toBe('string');
    expect(status.process).toMatch(/mongod/);
    expect(Number(status.uptime)).toBeGreaterThanOrEqual(0);
    expect(status.localTime).toBeInstanceOf(Date);
    expect(status.connections.current).toBeGreaterThanOrEqual(1);
  });

  it('when buildInfo, getParameter and listDatabases are run, then they answer in the documented shapes', async () => {
    const admin = conn.db!.admin();
    const info = await admin.buildInfo();
    expect(info.version).toMatch(/^\d+\.\d+/);
    expect(info.versionArray).toHaveLength(4);
    expect(await admin.command({ getParameter: 1, featureCompatibilityVersion: 1 })).toMatchObject({ ok: 1 });
    await Item().create({ name: 'listed' });
    const { databases } = await admin.listDatabases();
    expect(databases.map((d) => d.name)).toContain(conn.db!.databaseName);
    const names = await admin.command({ listDatabases: 1, nameOnly: true });
    expect(Object.keys(names.databases[0])).toEqual(['name']);
  });

  it('when a collection is dropped, then its documents and indexes go; dropping a missing one is ok (MongoDB 7)', async () => {
    const Dropped = conn.model('Dropped', new Schema({ key: { type: String, unique: true } }));
    await Dropped.init();
    await Dropped.create({ key: 'k' });
    await Dropped.collection.drop();
    expect(await Dropped.countDocuments()).toBe(0);
    expect((await conn.db!.listCollections({ name: Dropped.collection.collectionName }).toArray()).length).toBe(0);
    // The unique index went with it: the same key again is no duplicate.
    await Dropped.collection.insertMany([{ key: 'k' }, { key: 'k' }]);
    expect(await conn.db!.command({ drop: 'never_created_collection' })).toMatchObject({ ok: 1 });
  });

  it('when findOneAndDelete picks by sort, then it removes and returns that document (projected); with no match, null', async () => {
    await Item().create([
      { name: 'x1', group: 'g', n: 1 },
      { name: 'x2', group: 'g', n: 2 },
    ]);
    const removed = await Item().collection.findOneAndDelete({ group: 'g' }, { sort: { n: -1 }, projection: { name: 1, _id: 0 } });
    expect(removed).toEqual({ name: 'x2' });
    expect((await Item().find({ group: 'g' }).lean()).map((d) => d.name)).toEqual(['x1']);
    expect(await Item().findOneAndDelete({ group: 'none' })).toBeNull();
  });

  it('when count has skip and limit, and distinct a dotted key over arrays, then they answer as the manual says', async () => {
    await Item().create([
      { name: 'c1', group: 'c', tags: ['a', 'b'] },
      { name: 'c2', group: 'c', tags: ['b', 'c'] },
      { name: 'c3', group: 'c' },
    ]);
    const count = (extra: Record<string, number>) => conn.db!.command({ count: Item().collection.collectionName, query: { group: 'c' }, ...extra });
    expect((await count({ skip: 1 })).n).toBe(2);
    expect((await count({ limit: 2 })).n).toBe(2);
    expect((await count({ skip: 2, limit: 5 })).n).toBe(1);
    expect((await count({ skip: 9 })).n).toBe(0);
    expect((await Item().distinct('tags', { group: 'c' })).sort()).toEqual(['a', 'b', 'c']);
    expect((await Item().distinct('name', { group: 'c', tags: 'b' })).sort()).toEqual(['c1', 'c2']);
  });

  it('when indexes are dropped by name, by key and all at once, then listIndexes shows it; a missing one is IndexNotFound (27)', async () => {
    const schema = new Schema({ a: String, b: String, c: String }, { autoIndex: false });
    schema.index({ a: 1 });
    schema.index({ b: 1 }, { unique: true });
    schema.index({ c: 1 });
    const Indexed = conn.model('DroppedIndexes', schema);
    await Indexed.createIndexes();
    await Indexed.collection.dropIndex('a_1');
    await Indexed.collection.dropIndex({ c: 1 } as never);
    expect((await Indexed.listIndexes()).map((i) => i.name).sort()).toEqual(['_id_', 'b_1']);
    await expect(Indexed.collection.dropIndex('a_1')).rejects.toMatchObject({ code: 27 });
    await Indexed.collection.dropIndexes();
    expect((await Indexed.listIndexes()).map((i) => i.name)).toEqual(['_id_']);
    // b's uniqueness went with its index.
    await Indexed.collection.insertMany([{ b: 'same' }, { b: 'same' }]);
  });

  it('when a unique index has a collation of strength 2, then names differing only in case collide; strength 3 tells them apart', async () => {
    const schema = new Schema({ username: String, handle: String });
    schema.index({ username: 1 }, { unique: true, collation: { locale: 'en', strength: 2 } });
    schema.index({ handle: 1 }, { unique: true, collation: { locale: 'en', strength: 3 } });
    const User = conn.model('CollatedUser', schema);
    await User.init();
    expect((await User.listIndexes()).find((i) => i.name === 'username_1')?.collation).toMatchObject({ locale: 'en', strength: 2 });
    await User.create({ username: 'Ann', handle: 'Ann' });
    await expect(User.create({ username: 'ann', handle: 'x' })).rejects.toMatchObject({ code: 11000 });
    await User.create({ username: 'bob', handle: 'ann' });
  });

  it('when a pipeline has an unknown stage or a $group without _id or with a non-accumulator, then it is refused even over no documents', async () => {
    const agg = (pipeline: mongoose.mongo.Document[]) => conn.collection(`empty_${Date.now()}`).aggregate(pipeline).toArray();
    await expect(agg([{ $fakeStage: {} }])).rejects.toMatchObject({ code: 40324 });
    await expect(agg([{ $group: { n: { $sum: 1 } } }])).rejects.toMatchObject({ code: 15955 });
    await expect(agg([{ $group: { _id: null, foo: 'bar' } }])).rejects.toMatchObject({ code: 40234 });
    await expect(agg([{ $match: {}, $limit: 1 }])).rejects.toMatchObject({ code: 40323 });
  });

  it('when $merge ends a pipeline with a whenMatched pipeline, then each matched document is updated with $$new, unmatched ones are discarded, and no document comes back', async () => {
    const suffix = Date.now();
    const votes = conn.collection(`merge_votes_${suffix}`);
    const totals = conn.collection(`merge_totals_${suffix}`);
    await totals.insertMany([{ _id: 'a' as never, n: 10, keep: 'x', seen: 0 }, { _id: 'b' as never, n: 1, seen: 5 }]);
    await votes.insertMany([{ t: 'a' }, { t: 'a' }, { t: 'b' }, { t: 'c' }]);
    const merged = await votes
      .aggregate([
        { $group: { _id: '$t', votes: { $sum: 1 } } },
        // A fence as the counter tally's: only where the stored `seen` is below the new count.
        { $merge: { into: totals.collectionName, whenMatched: [{ $set: { n: { $cond: [{ $lt: ['$seen', '$$new.votes'] }, { $add: ['$n', '$$new.votes'] }, '$n'] }, seen: { $max: ['$seen', '$$new.votes'] } } }], whenNotMatched: 'discard' } },
      ])
      .toArray();
    expect(merged).toEqual([]);
    expect(await totals.find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 'a', n: 12, keep: 'x', seen: 2 },
      { _id: 'b', n: 1, seen: 5 },
    ]);
    // `let` names the variables instead of $$new.
    await votes.aggregate([{ $match: { t: 'b' } }, { $group: { _id: '$t', c: { $sum: 1 } } }, { $merge: { into: totals.collectionName, let: { add: '$c' }, whenMatched: [{ $set: { n: { $add: ['$n', '$$add'] } } }] } }]).toArray();
    expect(await totals.findOne({ _id: 'b' as never })).toMatchObject({ n: 2 });
  });

  it('when $merge uses its defaults (whenMatched merge, whenNotMatched insert), then matched documents get the new top-level fields and new ones are inserted; fail modes fail', async () => {
    const suffix = Date.now();
    const source = conn.collection(`merge_source_${suffix}`);
    const target = conn.collection(`merge_target_${suffix}`);
    await target.insertOne({ _id: 1 as never, a: { x: 1 }, b: 2 });
    await source.insertMany([{ _id: 1 as never, a: { y: 1 } }, { _id: 2 as never, c: 3 }]);
    await source.aggregate([{ $merge: { into: target.collectionName } }]).toArray();
    expect(await target.find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, a: { y: 1 }, b: 2 },
      { _id: 2, c: 3 },
    ]);
    await source.aggregate([{ $merge: { into: target.collectionName, whenMatched: 'replace' } }]).toArray();
    expect(await target.findOne({ _id: 1 as never })).toEqual({ _id: 1, a: { y: 1 } });
    await expect(source.aggregate([{ $merge: { into: target.collectionName, whenMatched: 'fail' } }]).toArray()).rejects.toMatchObject({ code: 11000 });
    await expect(source.aggregate([{ $merge: { into: `merge_none_${suffix}`, whenNotMatched: 'fail' } }]).toArray()).rejects.toMatchObject({ code: 13113 });
    await expect(source.aggregate([{ $merge: { into: target.collectionName } }, { $match: {} }]).toArray()).rejects.toMatchObject({ code: 40601 });
  });

  it('when a $merge names no collection, has an unknown field or its whenMatched pipeline changes _id, then it is refused and nothing is written', async () => {
    const suffix = Date.now();
    const source = conn.collection(`merge_bad_source_${suffix}`);
    const target = conn.collection(`merge_bad_target_${suffix}`);
    await target.insertOne({ _id: 1 as never, n: 1 });
    await source.insertMany([{ _id: 1 as never, n: 5 }, { _id: 2 as never, n: 6 }]);
    const merge = (spec: mongoose.mongo.Document) => source.aggregate([{ $merge: spec }]).toArray();
    await expect(merge({ into: 5 })).rejects.toMatchObject({ code: 51178 });
    await expect(merge({ into: { db: conn.db!.databaseName } })).rejects.toMatchObject({ code: 40414 });
    await expect(merge({ into: target.collectionName, whenMatchd: 'replace' })).rejects.toMatchObject({ code: 40415 });
    await expect(merge({ into: target.collectionName, whenMatched: [{ $set: { _id: 'moved' } }], whenNotMatched: 'discard' })).rejects.toMatchObject({ code: 66 });
    expect(await target.find().toArray()).toEqual([{ _id: 1, n: 1 }]);
    expect((await conn.db!.listCollections({ name: 'undefined' }).toArray()).length).toBe(0);
  });

  it('when a pipeline update changes _id, then it is refused (66); an upsert whose filter names no _id takes the _id its pipeline sets', async () => {
    const things = conn.collection(`pipeline_id_${Date.now()}`);
    await things.insertOne({ _id: 1 as never, k: 'a' });
    await expect(things.updateOne({ _id: 1 as never }, [{ $set: { _id: 2 } }])).rejects.toMatchObject({ code: 66 });
    await things.updateOne({ _id: 1 as never }, [{ $unset: '_id' }, { $set: { n: 1 } }]);
    await things.updateOne({ k: 'b' }, [{ $set: { _id: 'chosen', n: 2 } }], { upsert: true });
    expect(await things.find().sort({ n: 1 }).toArray()).toEqual([{ _id: 1, k: 'a', n: 1 }, { _id: 'chosen', k: 'b', n: 2 }]);
  });

  it('when a pipeline update copies, sets or nests a Decimal128, then each value keeps its type and a decimal in arithmetic gives a decimal, as on MongoDB', async () => {
    const raw = conn.collection(`pipeline_decimal_${Date.now()}`);
    const decimal = (value: string) => mongoose.Types.Decimal128.fromString(value);
    const { insertedId } = await raw.insertOne({ a: decimal('41'), b: 5, n: { c: decimal('7') }, big: decimal('1'), list: [decimal('2')] });
    await raw.updateOne({ _id: insertedId }, [
      { $set: { copy: '$a', a: '$b', b: '$a', big: 41, sum: { $add: ['$a', 1] }, plain: { $add: ['$b', 1] }, nested: { $add: ['$n.c', 1] }, types: ['$a', { $type: '$a' }, { $isNumber: '$n.c' }, { $type: '$list' }, { $isNumber: '$list' }] } },
    ]);
    const doc = await raw.findOne({ _id: insertedId }, { projection: { _id: 0 }, promoteLongs: false });
    expect(doc).toEqual({ a: 5, b: decimal('41'), n: { c: decimal('7') }, big: 41, copy: decimal('41'), sum: decimal('42'), plain: 6, nested: decimal('8'), list: [decimal('2')], types: [decimal('41'), 'decimal', true, 'array', false] });
  });

  it('when a document past 16 MiB is inserted, then BSONObjectTooLarge (10334) comes back and nothing is stored', async () => {
    const raw = conn.collection(`huge_${Date.now()}`);
    await expect(raw.insertOne({ data: 'x'.repeat(16 * 1024 * 1024) })).rejects.toMatchObject({ code: 10334 });
    expect(await raw.countDocuments()).toBe(0);
  });

  it('when a time-series collection is created with expireAfterSeconds, then listCollections reports both and TTL removes what expired', async () => {
    const name = `metrics_${Date.now()}`;
    await conn.db!.createCollection(name, { timeseries: { timeField: 'at', metaField: 'meta' }, expireAfterSeconds: 60 });
    const [info] = await conn.db!.listCollections({ name }).toArray();
    expect(info).toMatchObject({ type: 'timeseries', options: { timeseries: { timeField: 'at' }, expireAfterSeconds: 60 } });
    await conn.collection(name).insertMany([{ at: new Date(Date.now() - 3_600_000), meta: 'old' }, { at: new Date(), meta: 'new' }]);
    const was = await conn.db!.admin().command({ setParameter: 1, ttlMonitorSleepSecs: 1 });
    try {
      const deadline = Date.now() + 15_000;
      while ((await conn.collection(name).countDocuments()) > 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await conn.collection(name).find().toArray()).map((d) => d.meta)).toEqual(['new']);
    } finally {
      await conn.db!.admin().command({ setParameter: 1, ttlMonitorSleepSecs: was.was ?? 60 });
    }
  }, 30_000);

  it('when a find or an aggregate is explained, then queryPlanner names the namespace and a winning plan', async () => {
    const plan = await Item().collection.find({ group: 'x' }).explain();
    expect(plan.queryPlanner).toMatchObject({ namespace: `${conn.db!.databaseName}.${Item().collection.collectionName}` });
    expect(plan.queryPlanner.winningPlan).toBeDefined();
    const aggregated = await Item().collection.aggregate([{ $match: { group: 'x' } }]).explain();
    expect(JSON.stringify(aggregated)).toMatch(/queryPlanner|stages/);
  });

  it('when a unique index has a partialFilterExpression, then only matching documents must be unique', async () => {
    const schema = new Schema({ email: Schema.Types.Mixed, tenant: String });
    schema.index({ email: 1 }, { unique: true, partialFilterExpression: { email: { $type: 'string' } } });
    const Account = conn.model('PartialAccount', schema);
    await Account.init();
    // Documents outside the filter (no email, or a non-string one) never collide.
    await Account.create([{ tenant: 'a' }, { tenant: 'b' }, { email: 42 }, { email: 42 }]);
    await Account.create({ email: 'x@example.com' });
    await expect(Account.create({ email: 'x@example.com' })).rejects.toMatchObject({ code: 11000 });
    // An update that brings a document into the filter is checked too.
    const outside = await Account.findOne({ email: 42 });
    expect(outside).not.toBeNull();
    await expect(Account.updateOne({ _id: outside!._id }, { $set: { email: 'x@example.com' } })).rejects.toMatchObject({ code: 11000 });
  });

  it('when a unique index is sparse, then documents without the field never collide', async () => {
    const schema = new Schema({ handle: String });
    schema.index({ handle: 1 }, { unique: true, sparse: true });
    const Profile = conn.model('SparseProfile', schema);
    await Profile.init();
    await Profile.create([{}, {}, { handle: 'h' }]);
    await expect(Profile.create({ handle: 'h' })).rejects.toMatchObject({ code: 11000 });
  });

  it('when indexes with options are listed, then every option comes back and diffIndexes sees nothing to change', async () => {
    const schema = new Schema({ email: String, seenAt: Date, code: String });
    schema.index({ email: 1 }, { unique: true, partialFilterExpression: { email: { $exists: true } } });
    schema.index({ seenAt: 1 }, { expireAfterSeconds: 3600 });
    schema.index({ code: 1 }, { sparse: true });
    const Visit = conn.model('OptionedVisit', schema);
    await Visit.init();
    const indexes = await Visit.listIndexes();
    expect(indexes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: { email: 1 }, unique: true, partialFilterExpression: { email: { $exists: true } } }),
        expect.objectContaining({ key: { seenAt: 1 }, expireAfterSeconds: 3600 }),
        expect.objectContaining({ key: { code: 1 }, sparse: true }),
      ]),
    );
    expect(await Visit.diffIndexes()).toEqual({ toDrop: [], toCreate: [] });
  });

  it('when $set gives _id its current value, then the update succeeds; a different value is ImmutableField (66)', async () => {
    const item = await Item().create({ name: 'fixed-id' });
    await expect(Item().updateOne({ _id: item._id }, { $set: { _id: item._id, n: 5 } })).resolves.toMatchObject({ matchedCount: 1 });
    expect((await Item().findById(item._id).lean())!.n).toBe(5);
    await expect(Item().collection.updateOne({ _id: item._id }, { $set: { _id: new mongoose.Types.ObjectId() } })).rejects.toMatchObject({ code: 66 });
  });

  it('when an unordered bulkWrite has an operation mongoose cannot validate, then the rest apply and mongoose reports the validation error', async () => {
    const result = await Item().bulkWrite(
      [{ insertOne: { document: { name: 'valid-1' } } }, { insertOne: { document: { n: 1 } } }, { insertOne: { document: { name: 'valid-2' } } }],
      { ordered: false },
    );
    expect(result.insertedCount).toBe(2);
    const { validationErrors } = (result as { mongoose?: { validationErrors: Array<{ errors: Record<string, unknown> }> } }).mongoose!;
    expect(validationErrors).toHaveLength(1);
    expect(Object.keys(validationErrors[0].errors)).toEqual(['name']);
    expect(await Item().countDocuments({ name: { $in: ['valid-1', 'valid-2'] } })).toBe(2);
  });

  it('when an unordered bulkWrite has failing operations, then the others apply and writeErrors carry each failing index', async () => {
    await Item().create({ name: 'taken' });
    const error = await Item()
      .bulkWrite(
        [
          { insertOne: { document: { name: 'fresh-1' } } },
          { insertOne: { document: { name: 'taken' } } },
          { insertOne: { document: { name: 'fresh-2' } } },
          { updateOne: { filter: { name: 'fresh-1' }, update: { $inc: { name: 1 } } } },
        ],
        { ordered: false },
      )
      .catch((err: unknown) => err as { writeErrors?: Array<{ index: number; code: number }>; result?: { insertedCount: number } });
    const failures = (error as { writeErrors: Array<{ index: number; code: number }> }).writeErrors.map((e) => ({ index: e.index, code: e.code }));
    expect(failures).toEqual([
      { index: 1, code: 11000 },
      { index: 3, code: 14 },
    ]);
    expect(await Item().countDocuments({ name: { $in: ['fresh-1', 'fresh-2'] } })).toBe(2);
  });
});

describe('embedded MongoDB server: queries, projections and update paths as the manual documents them', () => {
  const docSchema = new Schema({ name: String, tags: [String], scores: [{ subject: String, score: Number }], owner: Schema.Types.Mixed, n: Number, list: [Number] }, { strict: false });
  const Doc = () => conn.models.QueryDoc ?? conn.model('QueryDoc', docSchema);

  beforeEach(async () => {
    await Doc().deleteMany({});
    await Doc().create([
      { name: 'a', tags: ['red', 'blue'], scores: [{ subject: 'math', score: 90 }, { subject: 'art', score: 40 }], list: [1, 2, 3, 4, 5], owner: { $ref: 'users', $id: 1 } },
      { name: 'b', tags: ['red'], scores: [{ subject: 'math', score: 50 }], list: [6, 7], owner: { $ref: 'users', $id: 2 } },
      { name: 'c', tags: ['green'], scores: [], list: [] },
    ]);
  });
  const names = async (filter: Record<string, unknown>) => (await Doc().find(filter).sort({ name: 1 }).lean()).map((d) => d.name);

  it('when $all, $elemMatch (with $in and $gte inside) and $not on a string array are queried, then matches follow the manual', async () => {
    expect(await names({ tags: { $all: ['red', 'blue'] } })).toEqual(['a']);
    expect(await names({ scores: { $elemMatch: { subject: { $in: ['math', 'music'] }, score: { $gte: 60 } } } })).toEqual(['a']);
    expect(await names({ tags: { $not: { $in: ['red'] } } })).toEqual(['c']);
    expect(await names({ tags: { $not: /^gr/ } })).toEqual(['a', 'b']);
  });

  it('when find has conditionals with nested operators, then matches follow the manual', async () => {
    expect(await names({ $or: [{ list: { $elemMatch: { $gt: 6 } } }, { tags: { $size: 1, $all: ['green'] } }] })).toEqual(['b', 'c']);
    expect(await names({ $and: [{ 'scores.score': { $not: { $lt: 50 } } }, { name: { $nin: ['c'] } }] })).toEqual(['b']);
    expect(await names({ $nor: [{ tags: 'red' }], list: { $exists: true, $size: 0 } })).toEqual(['c']);
  });

  it('when DBRef fields are queried by $ref and $id, then they match', async () => {
    expect(await names({ 'owner.$id': 2 })).toEqual(['b']);
    expect(await names({ 'owner.$ref': 'users' })).toEqual(['a', 'b']);
  });

  it('when $slice is combined with an inclusion or an exclusion projection, then both shapes follow the manual', async () => {
    const included = await Doc().findOne({ name: 'a' }).select({ name: 1, list: { $slice: 2 } }).lean();
    expect(included).toEqual({ _id: expect.anything(), name: 'a', list: [1, 2] });
    const excluded = await Doc().findOne({ name: 'a' }).select({ tags: 0, list: { $slice: -2 } }).lean();
    expect(excluded).toMatchObject({ name: 'a', list: [4, 5] });
    expect(excluded).not.toHaveProperty('tags');
    const skipped = await Doc().collection.findOne({ name: 'a' }, { projection: { list: { $slice: [1, 2] } } });
    expect(skipped!.list).toEqual([2, 3]);
  });

  it('when a projection names only top-level fields, then inclusion keeps _id first and the stored order, exclusion drops the named fields', async () => {
    const raw = Doc().collection;
    const included = await raw.findOne({ name: 'a' }, { projection: { list: 1, name: 1 } });
    expect(Object.keys(included!)).toEqual(['_id', 'name', 'list']);
    expect(await raw.findOne({ name: 'a' }, { projection: { _id: 0, name: 1, missing: 1 } })).toEqual({ name: 'a' });
    expect(Object.keys((await raw.findOne({ name: 'a' }, { projection: { _id: 1 } }))!)).toEqual(['_id']);
    const excluded = await raw.findOne({ name: 'b' }, { projection: { tags: 0, scores: false } });
    expect(excluded).toMatchObject({ name: 'b', list: [6, 7] });
    expect(excluded).not.toHaveProperty('tags');
    expect(excluded).not.toHaveProperty('scores');
    expect(Object.keys((await raw.findOne({ name: 'b' }, { projection: { _id: 0 } }))!)).not.toContain('_id');
    // Inclusion and exclusion of other fields in one projection: refused, as by MongoDB.
    await expect(raw.findOne({ name: 'a' }, { projection: { name: 1, tags: 0 } })).rejects.toThrow();
  });

  it('when $set writes scalars to top-level fields, then only real changes count as modified and new fields are added', async () => {
    const raw = Doc().collection;
    const at = new Date('2026-11-30T00:00:00Z');
    const first = await raw.updateMany({ name: { $in: ['a', 'b'] } }, { $set: { n: 7, at } });
    expect(first).toMatchObject({ matchedCount: 2, modifiedCount: 2 });
    // The same values again (an equal Date too): matched, not modified.
    expect(await raw.updateMany({ name: { $in: ['a', 'b'] } }, { $set: { n: 7, at: new Date(at.getTime()) } })).toMatchObject({ matchedCount: 2, modifiedCount: 0 });
    expect(await raw.updateOne({ name: 'a' }, { $set: { n: 8, at } })).toMatchObject({ modifiedCount: 1 });
    expect(await raw.find({ name: { $in: ['a', 'b'] } }, { projection: { _id: 0, name: 1, n: 1, at: 1 } }).sort({ name: 1 }).toArray()).toEqual([
      { name: 'a', n: 8, at },
      { name: 'b', n: 7, at },
    ]);
    // findOneAndUpdate returns the document as it was, or as it is, as asked.
    expect(await raw.findOneAndUpdate({ name: 'b' }, { $set: { n: 9 } }, { returnDocument: 'before', projection: { _id: 0, n: 1 } })).toEqual({ n: 7 });
    expect(await raw.findOneAndUpdate({ name: 'b' }, { $set: { n: 10 } }, { returnDocument: 'after', projection: { _id: 0, n: 1 } })).toEqual({ n: 10 });
    // A scalar over an array or an object replaces it, as MongoDB does.
    await raw.updateOne({ name: 'a' }, { $set: { tags: 'none', owner: null } });
    expect(await raw.findOne({ name: 'a' }, { projection: { _id: 0, tags: 1, owner: 1 } })).toEqual({ tags: 'none', owner: null });
  });

  it('when a filter has top-level equalities and $ne, then arrays match by their elements and missing fields count as not equal', async () => {
    const raw = conn.collection(`raw_eq_${Date.now()}`);
    await raw.insertMany([
      { k: 'a', status: 'approved', deleted: false, n: 1 },
      { k: 'b', status: 'approved', deleted: true, n: '1' },
      { k: 'c', status: ['draft', 'approved'], n: 1.0 },
      { k: 'd', status: 'approved', deleted: null, n: true },
      { k: 'e', status: 'pending', deleted: [true] },
    ]);
    const keys = async (filter: mongoose.mongo.Filter<mongoose.mongo.Document>) => (await raw.find(filter).sort({ k: 1 }).toArray()).map((d) => d.k);
    expect(await keys({ status: 'approved', deleted: { $ne: true } })).toEqual(['a', 'c', 'd']);
    expect(await keys({ n: 1 })).toEqual(['a', 'c']);
    expect(await keys({ n: { $eq: '1' } })).toEqual(['b']);
    expect(await keys({ deleted: { $ne: true } })).toEqual(['a', 'c', 'd']);
    expect(await raw.countDocuments({ status: 'approved', deleted: { $ne: true } })).toBe(3);
  });

  it('when a filter pins ObjectIds by equality or $ne, then only an ObjectId of the same bytes is equal (not its hex string), arrays match by their elements, missing fields are not equal', async () => {
    const raw = conn.collection(`raw_oid_${Date.now()}`);
    const [x, y] = [new mongoose.Types.ObjectId(), new mongoose.Types.ObjectId()];
    await raw.insertMany([
      { k: 'a', videoId: x, userId: 'u' },
      { k: 'b', videoId: x.toHexString(), userId: 'u' },
      { k: 'c', videoId: [y, x], userId: 'u' },
      { k: 'd', videoId: y, userId: 'u' },
      { k: 'e', userId: 'u' },
      { k: 'f', videoId: new mongoose.Types.ObjectId(x.toHexString()), userId: 'v' },
    ]);
    // Unsorted (sorted here): a find with a sort is matched by mingo, without one by the server's own test.
    const keys = async (filter: mongoose.mongo.Filter<mongoose.mongo.Document>) => (await raw.find(filter).toArray()).map((d) => String(d.k)).sort();
    expect(await keys({ videoId: x })).toEqual(['a', 'c', 'f']);
    expect(await keys({ videoId: x, userId: 'u' })).toEqual(['a', 'c']);
    expect(await keys({ videoId: { $eq: y } })).toEqual(['c', 'd']);
    expect(await keys({ videoId: { $ne: x } })).toEqual(['b', 'd', 'e']);
    expect(await keys({ videoId: x.toHexString() })).toEqual(['b']);
  });

  it("when a unique index's field holds an array, then a filter pinning the index's fields finds the document by an element, as MongoDB's multikey index does", async () => {
    const raw = conn.collection(`raw_multikey_${Date.now()}`);
    await raw.createIndex({ userId: 1, videoId: 1 }, { unique: true });
    const [x, y] = [new mongoose.Types.ObjectId(), new mongoose.Types.ObjectId()];
    await raw.insertMany([{ userId: 'u', videoId: [x, y] }, { userId: ['v', 'w'], videoId: x }]);
    expect(await raw.countDocuments({ userId: 'u', videoId: x })).toBe(1);
    expect(await raw.countDocuments({ userId: 'w', videoId: { $eq: x } })).toBe(1);
    expect((await raw.findOneAndUpdate({ userId: 'u', videoId: y }, { $set: { seen: true } }, { upsert: true, returnDocument: 'after' }))?.videoId).toEqual([x, y]);
    expect(await raw.countDocuments({})).toBe(2);
  });

  it('when a filter pins -0 where 0 is stored, then it matches, looked up by _id or a unique index', async () => {
    const raw = conn.collection(`raw_minus_zero_${Date.now()}`);
    await raw.createIndex({ userId: 1, videoId: 1 }, { unique: true });
    const videoId = new mongoose.Types.ObjectId();
    await raw.insertMany([{ userId: 0, videoId }, { _id: 0 as never, userId: 'z' }]);
    expect(await raw.countDocuments({ userId: -0, videoId })).toBe(1);
    expect(await raw.countDocuments({ _id: -0 as never })).toBe(1);
  });

  it('when a filter gives a regular expression for _id or a unique key, then it matches by the pattern (not a key lookup), and an upsert does not copy it', async () => {
    const raw = conn.collection(`raw_regex_key_${Date.now()}`);
    await raw.createIndex({ userId: 1, videoId: 1 }, { unique: true });
    const videoId = new mongoose.Types.ObjectId();
    await raw.insertMany([{ _id: 'abc' as never, userId: 'user-1', videoId }, { _id: 'xyz' as never, userId: 'other', videoId }]);
    const ids = async (filter: mongoose.mongo.Filter<mongoose.mongo.Document>) => (await raw.find(filter).toArray()).map((d) => String(d._id)).sort();
    expect(await ids({ _id: /^a/ as never })).toEqual(['abc']);
    expect(await ids({ _id: { $in: [/^x/, 'abc'] } as never })).toEqual(['abc', 'xyz']);
    expect(await ids({ userId: /^user-/, videoId })).toEqual(['abc']);
    const inserted = await raw.findOneAndUpdate({ userId: /^nobody/, videoId: new mongoose.Types.ObjectId() }, { $set: { n: 1 } }, { upsert: true, returnDocument: 'after' });
    expect(inserted).not.toHaveProperty('userId');
  });

  it('when a filter names an unknown operator, then the command fails even where no document is a candidate, and an upsert inserts nothing', async () => {
    const raw = conn.collection(`raw_badop_${Date.now()}`);
    await raw.createIndex({ userId: 1, videoId: 1 }, { unique: true });
    const videoId = new mongoose.Types.ObjectId();
    const bad = { userId: 'u', videoId, n: { $nosuch: 1 } } as mongoose.mongo.Filter<mongoose.mongo.Document>;
    await expect(raw.find(bad).toArray()).rejects.toThrow(/\$nosuch/);
    await expect(raw.findOneAndUpdate(bad, { $set: { n: 1 } }, { upsert: true })).rejects.toThrow(/\$nosuch/);
    await expect(raw.updateOne(bad, { $set: { n: 1 } }, { upsert: true })).rejects.toThrow(/\$nosuch/);
    expect(await raw.countDocuments({})).toBe(0);
  });

  it('when the positional $ names the element the filter matched, then $set, $push and $addToSet change that element', async () => {
    await Doc().collection.updateOne({ name: 'a', 'scores.subject': 'art' }, { $set: { 'scores.$.score': 45 } });
    // The driver's types do not know positional paths: the updates as plain documents.
    const pushNote: mongoose.mongo.Document = { $push: { 'scores.$.notes': 'good' } };
    const addNote: mongoose.mongo.Document = { $addToSet: { 'scores.$.notes': 'good' } };
    await Doc().collection.updateOne({ name: 'a', 'scores.subject': 'math' }, pushNote);
    await Doc().collection.updateOne({ name: 'a', 'scores.subject': 'math' }, addNote);
    await Doc().collection.updateOne({ name: 'a', tags: 'blue' }, { $set: { 'tags.$': 'navy' } });
    const a = await Doc().findOne({ name: 'a' }).lean<{ tags: string[]; scores: Array<{ subject: string; score: number; notes?: string[] }> }>();
    expect(a!.scores).toEqual([
      { _id: expect.anything(), subject: 'math', score: 90, notes: ['good'] },
      { _id: expect.anything(), subject: 'art', score: 45 },
    ]);
    expect(a!.tags).toEqual(['red', 'navy']);
    // Per document: each gets the index of its own matched element.
    await Doc().collection.updateMany({ 'scores.subject': 'math' }, { $inc: { 'scores.$.score': 1 } });
    expect((await Doc().find({ name: { $in: ['a', 'b'] } }).sort({ name: 1 }).lean()).map((d) => d.scores![0].score)).toEqual([91, 51]);
    // Without a condition on the array, MongoDB refuses.
    await expect(Doc().collection.updateOne({ name: 'a' }, { $set: { 'scores.$.score': 0 } })).rejects.toMatchObject({ code: 2 });
  });

  it('when $push, $addToSet, $pull or $pop names a field that holds no array, then BadValue (2) and nothing changes', async () => {
    const raw = Doc().collection;
    for (const update of [{ $push: { n: 1 } }, { $addToSet: { name: 'x' } }, { $pull: { n: 1 } }, { $pop: { name: 1 } }] as mongoose.mongo.Document[]) {
      await raw.updateOne({ name: 'b' }, { $set: { n: 7 } });
      await expect(raw.updateOne({ name: 'b' }, update)).rejects.toMatchObject({ code: 2 });
    }
    expect(await raw.findOne({ name: 'b' })).toMatchObject({ name: 'b', n: 7 });
    // A missing field is created as an array.
    const push: mongoose.mongo.Document = { $push: { fresh: 1 } };
    await raw.updateOne({ name: 'b' }, push);
    expect((await raw.findOne({ name: 'b' }))!.fresh).toEqual([1]);
  });

  it('when one $set names two fields below every element ($[]), then both change in each element', async () => {
    const update: mongoose.mongo.Document = { $set: { 'scores.$[].score': 0, 'scores.$[].seen': true, n: 1 } };
    await Doc().collection.updateOne({ name: 'a' }, update);
    const a = await Doc().collection.findOne({ name: 'a' });
    expect(a!.scores.map((s: { score: number; seen: boolean }) => [s.score, s.seen])).toEqual([
      [0, true],
      [0, true],
    ]);
  });

  it('when one update names the same path or a path and its prefix, then it is a conflict (40); sibling paths and array filters are not', async () => {
    await expect(Doc().collection.updateOne({ name: 'a' }, { $set: { n: 1 }, $inc: { n: 1 } })).rejects.toMatchObject({ code: 40 });
    await expect(Doc().collection.updateOne({ name: 'a' }, { $set: { scores: [], 'scores.0.score': 1 } })).rejects.toMatchObject({ code: 40 });
    await expect(Doc().collection.updateOne({ name: 'a' }, { $set: { 'scores.0.score': 1, 'scores.1.score': 2, n: 3 } })).resolves.toMatchObject({ modifiedCount: 1 });
    await expect(
      Doc().collection.updateOne({ name: 'a' }, { $set: { 'scores.$[m].score': 99, 'scores.$[o].score': 0 } }, { arrayFilters: [{ 'm.subject': 'math' }, { 'o.subject': 'art' }] }),
    ).resolves.toMatchObject({ modifiedCount: 1 });
    const a = await Doc().findOne({ name: 'a' }).lean<{ scores: Array<{ score: number }> }>();
    expect(a!.scores.map((s) => s.score)).toEqual([99, 0]);
  });
});

describe('embedded MongoDB server: collection options', () => {
  it("when a schema's collectionOptions create a capped collection, then listCollections reports them and the oldest documents go", async () => {
    const Log = conn.model('CappedLog', new Schema({ line: Number }, { collectionOptions: { capped: true, size: 1_000_000, max: 3 } }));
    await Log.init();
    await Log.createCollection();
    const [info] = await conn.db!.listCollections({ name: Log.collection.collectionName }, { nameOnly: false }).toArray();
    expect(info && 'options' in info ? info.options : undefined).toMatchObject({ capped: true, size: 1_000_000, max: 3 });
    for (let line = 1; line <= 5; line++) await Log.create({ line });
    expect((await Log.find().lean()).map((d) => d.line)).toEqual([3, 4, 5]);
  });

  // The embedded server's own answer (a real MongoDB implements validators).
  (onRealMongo ? it.skip : it)('when a collection option the server does not implement is given, then it answers a clear not-supported error', async () => {
    await expect(conn.db!.createCollection('validated_things', { validator: { n: { $gte: 0 } } })).rejects.toThrow(/not supported by the embedded server/);
  });
});

// What the embedded server does not implement, it refuses by name instead of ignoring.
(onRealMongo ? describe.skip : describe)('embedded MongoDB server: unsupported features answer clearly', () => {
  const Thing = () => conn.models.Thing ?? conn.model('Thing', new Schema({ name: String }));

  it('when a collation is asked for, then the server refuses it instead of comparing bytes', async () => {
    await expect(Thing().find({ name: 'a' }).collation({ locale: 'en', strength: 2 }).lean()).rejects.toThrow(/collation is not supported/);
    await expect(Thing().updateOne({ name: 'a' }, { $set: { name: 'b' } }, { collation: { locale: 'en' } })).rejects.toThrow(/collation is not supported/);
  });

  it('when a pipeline ends in $out, then the server refuses it instead of answering the documents and writing none', async () => {
    const source = conn.collection(`out_source_${Date.now()}`);
    await source.insertOne({ n: 1 });
    await expect(source.aggregate([{ $out: `out_target_${Date.now()}` }]).toArray()).rejects.toThrow(/\$out is not supported by the embedded server/);
  });

  it('when a transaction is started, then the server refuses it as a standalone MongoDB does', async () => {
    const session = await conn.startSession();
    try {
      session.startTransaction();
      // The driver rewords the server's code 20 ("Transaction numbers are only allowed on a replica set member").
      await expect(Thing().create([{ name: 'in-transaction' }], { session })).rejects.toThrow(/does not support retryable writes|Transaction numbers/);
    } finally {
      await session.endSession();
    }
    expect(await Thing().countDocuments({ name: 'in-transaction' })).toBe(0);
  });
});
