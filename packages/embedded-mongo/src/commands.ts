/**
 * The MongoDB commands the official driver and mongoose send, answered from the in-memory store.
 * Replies follow the server's documented shapes (cursor batches, writeErrors, lastErrorObject).
 */
import { Long, calculateObjectSize, type Document } from 'bson';
import { Aggregator, Query } from './mingo';
import { CommandError, duplicateKeyError } from './errors';
import { getPath, type Collection, type Store } from './store';

const DEFAULT_BATCH_SIZE = 101;
/** A batch never exceeds this many BSON bytes, as in MongoDB (replies must fit in one message). */
const MAX_BATCH_BYTES = 16 * 1024 * 1024 - 16 * 1024;

/** Shapes a batch for the reply (a find's projection); identity when absent. */
type Shape = (docs: Document[]) => Document[];

/**
 * Up to `count` documents from `start`, shaped, stopping before the batch would pass
 * MAX_BATCH_BYTES. Shaping a batch at a time keeps a large cursor from projecting every
 * document up front (at a million documents that was most of a find's time and memory).
 */
function takeBatch(docs: Document[], start: number, count: number, shape?: Shape): Document[] {
  const window = docs.slice(start, start + count);
  const shaped = shape ? shape(window) : window;
  let bytes = 0;
  let taken = 0;
  for (; taken < shaped.length; taken++) {
    bytes += calculateObjectSize(shaped[taken]);
    if (bytes > MAX_BATCH_BYTES && taken > 0) break;
  }
  return taken === shaped.length ? shaped : shaped.slice(0, taken);
}
const CURSOR_IDLE_TIMEOUT_MS = 10 * 60_000;

interface OpenCursor {
  ns: string;
  docs: Document[];
  shape?: Shape;
  position: number;
  lastUsed: number;
}

export interface CommandContext {
  store: Store;
  connectionId: number;
  /** Open and ever-opened client connections of the server, for serverStatus. */
  connections: () => { current: number; totalCreated: number };
  /** Epoch ms the server started, for serverStatus's uptime. */
  startedAt: number;
  /** Bytes of the message being answered: only one past 16 MiB can hold a document past it. */
  messageBytes?: number;
}

const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;

function toNumber(value: unknown): number {
  if (value instanceof Long) return value.toNumber();
  return Number(value);
}

/** Cursors shared by all connections of one server, with an idle timeout as mongod has. */
export class CursorRegistry {
  private readonly cursors = new Map<number, OpenCursor>();
  private nextId = 1;

  /** The first batch; registers the remainder as a cursor when there is more. */
  open(ns: string, docs: Document[], batchSize: number | undefined, singleBatch = false, shape?: Shape): Document {
    const size = batchSize && batchSize > 0 ? batchSize : DEFAULT_BATCH_SIZE;
    const firstBatch = takeBatch(docs, 0, size, shape);
    let id = 0;
    if (!singleBatch && docs.length > firstBatch.length) {
      id = this.nextId++;
      this.cursors.set(id, { ns, docs, shape, position: firstBatch.length, lastUsed: Date.now() });
    }
    return { cursor: { firstBatch, id: Long.fromNumber(id), ns }, ok: 1 };
  }

  more(id: number, batchSize: number | undefined): Document {
    const cursor = this.cursors.get(id);
    if (!cursor) throw new CommandError(43, 'CursorNotFound', `cursor id ${id} not found`);
    const size = batchSize && batchSize > 0 ? batchSize : cursor.docs.length;
    const nextBatch = takeBatch(cursor.docs, cursor.position, size, cursor.shape);
    cursor.position += nextBatch.length;
    cursor.lastUsed = Date.now();
    const exhausted = cursor.position >= cursor.docs.length;
    if (exhausted) this.cursors.delete(id);
    return { cursor: { nextBatch, id: Long.fromNumber(exhausted ? 0 : id), ns: cursor.ns }, ok: 1 };
  }

  kill(ids: number[]): Document {
    const killed: Long[] = [];
    const notFound: Long[] = [];
    for (const id of ids) (this.cursors.delete(id) ? killed : notFound).push(Long.fromNumber(id));
    return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [], ok: 1 };
  }

  sweepIdle(now = Date.now()): void {
    for (const [id, cursor] of this.cursors) if (now - cursor.lastUsed > CURSOR_IDLE_TIMEOUT_MS) this.cursors.delete(id);
  }

  clear(): void {
    this.cursors.clear();
  }
}

const STAGES = new Set(
  '$addFields $bucket $bucketAuto $count $densify $documents $facet $fill $graphLookup $group $limit $lookup $match $merge $out $project $redact $replaceRoot $replaceWith $sample $set $setWindowFields $skip $sort $sortByCount $unionWith $unset $unwind'.split(' '),
);

/**
 * The checks MongoDB makes of a pipeline before it reads a document; mingo only finds these
 * while running a stage, so over an empty collection a wrong pipeline answered documents.
 */
function checkPipeline(pipeline: Document[]): void {
  for (const [at, stage] of pipeline.entries()) {
    const names = Object.keys(stage);
    if (names.length !== 1) throw new CommandError(40323, 'Location40323', 'A pipeline stage specification object must contain exactly one field.');
    if (!STAGES.has(names[0])) throw new CommandError(40324, 'Location40324', `Unrecognized pipeline stage name: '${names[0]}'`);
    if ((names[0] === '$merge' || names[0] === '$out') && at !== pipeline.length - 1) throw new CommandError(40601, 'Location40601', `${names[0]} can only be the final stage in the pipeline`);
    // mingo's $out writes into a JS array: the documents came back and no collection was written.
    if (names[0] === '$out') throw new CommandError(115, 'CommandNotSupported', '$out is not supported by the embedded server (use $merge)');
    if (names[0] !== '$group') continue;
    const group = stage.$group as Document;
    if (!('_id' in group)) throw new CommandError(15955, 'Location15955', 'a group specification must include an _id');
    const notAccumulator = Object.entries(group).find(([field, spec]) => field !== '_id' && (spec === null || typeof spec !== 'object' || Array.isArray(spec) || Object.keys(spec as Document).length !== 1));
    if (notAccumulator) throw new CommandError(40234, 'Location40234', `The field '${notAccumulator[0]}' must be an accumulator object`);
  }
}

/** The stages MongoDB allows in a `$merge`'s whenMatched pipeline (those of a pipeline update). */
const MERGE_PIPELINE_STAGES = new Set(['$addFields', '$set', '$project', '$unset', '$replaceRoot', '$replaceWith']);
const MERGE_WHEN_MATCHED = ['replace', 'keepExisting', 'merge', 'fail'];
const MERGE_WHEN_NOT_MATCHED = ['insert', 'discard', 'fail'];
/** The fields of a `$merge` stage MongoDB's parser knows. */
const MERGE_FIELDS = new Set(['into', 'on', 'let', 'whenMatched', 'whenNotMatched', 'targetCollectionVersion']);

/**
 * A final `$merge` stage: each result document is matched on `_id` in the target collection
 * and updated by `whenMatched` (a pipeline sees the document as `$$new`, or the `let`
 * variables), or handled by `whenNotMatched`. As in MongoDB, the documents are merged one by
 * one (a failure keeps the earlier ones' writes). `on` fields other than `_id` are refused.
 */
function mergeInto(ctx: CommandContext, db: string, stage: unknown, docs: Document[]): void {
  const spec = (typeof stage === 'string' ? { into: stage } : stage) as Document;
  // MongoDB's parser refuses what it does not know: a misspelt option is not ignored, no collection is guessed.
  const unknown = Object.keys(spec).find((name) => !MERGE_FIELDS.has(name));
  if (unknown) throw new CommandError(40415, 'Location40415', `BSON field '$merge.${unknown}' is an unknown field.`);
  const target0 = spec.into as unknown;
  if (typeof target0 !== 'string' && (typeof target0 !== 'object' || target0 === null || Array.isArray(target0))) {
    throw new CommandError(51178, 'Location51178', `$merge 'into' field  must be either a string or an object, but found ${target0 === null ? 'null' : Array.isArray(target0) ? 'array' : typeof target0}`);
  }
  if (typeof target0 === 'object' && typeof (target0 as Document).coll !== 'string') throw new CommandError(40414, 'Location40414', "BSON field '$merge.into.coll' is missing but a required field");
  const into = typeof target0 === 'string' ? { db, coll: target0 } : { db: String((target0 as Document).db ?? db), coll: String((target0 as Document).coll) };
  const on = spec.on ?? '_id';
  if (on !== '_id' && !(Array.isArray(on) && on.length === 1 && on[0] === '_id')) throw new CommandError(115, 'CommandNotSupported', "$merge 'on' fields other than _id are not supported by the embedded server");
  const { whenMatched = 'merge', whenNotMatched = 'insert' } = spec;
  if (!Array.isArray(whenMatched) && !MERGE_WHEN_MATCHED.includes(String(whenMatched))) throw new CommandError(2, 'BadValue', `Enumeration value '${String(whenMatched)}' for field '$merge.whenMatched' is not a valid value.`);
  if (!MERGE_WHEN_NOT_MATCHED.includes(String(whenNotMatched))) throw new CommandError(2, 'BadValue', `Enumeration value '${String(whenNotMatched)}' for field '$merge.whenNotMatched' is not a valid value.`);
  const notAllowed = Array.isArray(whenMatched) && (whenMatched as Document[]).map((s) => Object.keys(s)[0]).find((name) => !MERGE_PIPELINE_STAGES.has(name));
  if (notAllowed) throw new CommandError(72, 'InvalidOptions', `${notAllowed} is not allowed to be used within an update`);
  const target = whenNotMatched === 'insert' ? ctx.store.db(into.db).ensure(into.coll).collection : ctx.store.db(into.db).collection(into.coll);
  for (const doc of docs) {
    const filter = { _id: doc._id ?? null };
    const matched = doc._id !== undefined && target !== undefined && target.match(filter).length > 0;
    if (matched && target) {
      if (whenMatched === 'fail') throw duplicateKeyError(target.ns, '_id_', { _id: 1 }, filter);
      if (Array.isArray(whenMatched)) {
        // Without `let`, MongoDB defines `$$new` as the result document.
        const variables = spec.let === undefined ? { new: doc } : (new Aggregator([{ $replaceWith: spec.let }]).run([doc])[0] ?? {});
        target.update(filter, whenMatched as Document[], { variables });
      } else if (whenMatched === 'replace') target.update(filter, doc, {});
      else if (whenMatched === 'merge') {
        const { _id: ignored, ...fields } = doc;
        if (Object.keys(fields).length > 0) target.update(filter, { $set: fields }, {});
      }
    }
    if (matched || whenNotMatched === 'discard') continue;
    if (whenNotMatched === 'fail') throw new CommandError(13113, 'MergeStageNoMatchingDocument', '$merge could not find a matching document in the target collection for at least one document in the source collection');
    (target as Collection).insert(doc);
  }
}

type Handler = (command: Document, db: string, ctx: CommandContext, cursors: CursorRegistry) => Document;

/** Collection options this server keeps, reports and honours (capped: max and size). */
const SUPPORTED_COLLECTION_OPTIONS = new Set(['capped', 'size', 'max', 'changeStreamPreAndPostImages', 'comment', 'timeseries', 'expireAfterSeconds', 'clusteredIndex']);
/** Fields of a `create` command that are not collection options. */
const COMMAND_FIELDS = new Set(['create', '$db', 'lsid', '$clusterTime', 'txnNumber', 'writeConcern', 'apiVersion', 'apiStrict', 'apiDeprecationErrors', '$readPreference']);

/**
 * The options of a `create` command, kept for listCollections. An option whose behaviour this
 * server does not implement (validation, collation, time series, views, clustered or expiring
 * collections) is refused by name rather than accepted and ignored.
 */
function collectionOptions(command: Document): Document {
  const options: Document = {};
  for (const [option, value] of Object.entries(command)) {
    if (COMMAND_FIELDS.has(option)) continue;
    if (!SUPPORTED_COLLECTION_OPTIONS.has(option)) throw new CommandError(115, 'CommandNotSupported', `collection option '${option}' is not supported by the embedded server`);
    options[option] = value;
  }
  if (options.capped && !(Number(options.size) > 0)) throw new CommandError(72, 'InvalidOptions', 'the size field is required when capped is true');
  // A time-series collection stores its measurements as documents here (no buckets); its TTL is kept.
  if (options.timeseries && !(options.timeseries as Document).timeField) throw new CommandError(40414, 'Location40414', "BSON field 'timeseries.timeField' is missing but a required field");
  return options;
}

function collectionOf(ctx: CommandContext, db: string, name: unknown): Collection | undefined {
  return ctx.store.db(db).collection(String(name));
}

function ensureCollection(ctx: CommandContext, db: string, name: unknown): Collection {
  return ctx.store.db(db).ensure(String(name)).collection;
}

function writeResult(n: number, writeErrors: Document[], extra: Document = {}): Document {
  return { n, ...extra, ...(writeErrors.length > 0 ? { writeErrors } : {}), ok: 1 };
}

/**
 * Runs a write command's statements (its `list` field) in order: a CommandError becomes that
 * statement's entry of `writeErrors` and ends an ordered command. `done`: the statements that succeeded.
 */
function eachStatement(command: Document, list: string, run: (statement: Document, index: number) => void) {
  const writeErrors: Document[] = [];
  let done = 0;
  const statements = (command[list] as Document[]) ?? [];
  for (let i = 0; i < statements.length; i++) {
    try {
      run(statements[i], i);
      done++;
    } catch (err) {
      if (!(err instanceof CommandError)) throw err;
      writeErrors.push(err.toWriteError(i));
      if (command.ordered !== false) break;
    }
  }
  return { done, writeErrors };
}

function hello(_command: Document, _db: string, ctx: CommandContext): Document {
  return {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: ctx.connectionId,
    minWireVersion: 0,
    maxWireVersion: 21,
    readOnly: false,
    ok: 1,
  };
}

const EXPLAINABLE = new Set(['find', 'aggregate', 'count', 'distinct', 'findAndModify', 'update', 'delete']);
const BUILD_INFO = { version: '7.0.0-embedded', versionArray: [7, 0, 0, 0], maxBsonObjectSize: 16 * 1024 * 1024, ok: 1 };

const handlers: Record<string, Handler> = {
  hello,
  ismaster: hello,
  isMaster: hello,
  ping: () => ({ ok: 1 }),
  buildInfo: () => BUILD_INFO,
  buildinfo: () => BUILD_INFO,
  endSessions: () => ({ ok: 1 }),
  getParameter: () => ({ ok: 1 }),
  setParameter(command, _db, ctx) {
    const names = Object.keys(command).filter((key) => key !== 'setParameter' && !key.startsWith('$') && key !== 'lsid');
    if (names.some((name) => name !== 'ttlMonitorSleepSecs')) throw new CommandError(72, 'InvalidOptions', `attempted to set unrecognized parameter [${names.join(', ')}] (the embedded server sets ttlMonitorSleepSecs only)`);
    const was = ctx.store.ttlMonitorSleepSecs;
    if (names.length > 0) ctx.store.ttlMonitorSleepSecs = Math.max(1, toNumber(command.ttlMonitorSleepSecs));
    return { was, ok: 1 };
  },
  /** No query planner: every plan is the scan this server does (`_id` and unique lookups aside). Nothing runs. */
  explain(command, db) {
    const inner = command.explain as Document;
    const name = Object.keys(inner)[0];
    if (!EXPLAINABLE.has(name)) throw new CommandError(72, 'InvalidOptions', `Explain failed due to unknown command: ${name}`);
    const plan = { stage: 'COLLSCAN', filter: inner.filter ?? inner.query ?? inner.q ?? {}, direction: 'forward' };
    return { explainVersion: '1', queryPlanner: { namespace: `${db}.${String(inner[name])}`, parsedQuery: plan.filter, winningPlan: plan, rejectedPlans: [] }, command: inner, serverInfo: { host: 'embedded', version: BUILD_INFO.version }, ok: 1 };
  },
  /** The documented top-level shape; counters this server does not keep are absent, not invented. */
  serverStatus: (_command, _db, ctx) => {
    const uptimeMillis = Date.now() - ctx.startedAt;
    const connections = ctx.connections();
    return {
      host: 'embedded',
      version: BUILD_INFO.version,
      process: 'mongod',
      pid: Long.fromNumber(process.pid),
      uptime: Math.floor(uptimeMillis / 1000),
      uptimeMillis: Long.fromNumber(uptimeMillis),
      uptimeEstimate: Long.fromNumber(Math.floor(uptimeMillis / 1000)),
      localTime: new Date(),
      connections: { current: connections.current, available: 1_000_000 - connections.current, totalCreated: connections.totalCreated, active: connections.current },
      ok: 1,
    };
  },

  find(command, db, ctx, cursors) {
    const collection = collectionOf(ctx, db, command.find);
    const docs = collection
      ? collection.find((command.filter as Document) ?? {}, {
          sort: command.sort as Document,
          skip: command.skip ? toNumber(command.skip) : 0,
          limit: command.limit ? toNumber(command.limit) : 0,
        })
      : [];
    const batchSize = command.batchSize === undefined ? undefined : toNumber(command.batchSize);
    const projection = command.projection as Document | undefined;
    const shape = collection && projection ? (batch: Document[]) => collection.project(batch, projection) : undefined;
    return cursors.open(`${db}.${command.find}`, docs, batchSize, Boolean(command.singleBatch) || toNumber(command.limit ?? 0) < 0, shape);
  },

  getMore(command, _db, _ctx, cursors) {
    return cursors.more(toNumber(command.getMore), command.batchSize === undefined ? undefined : toNumber(command.batchSize));
  },

  killCursors(command, _db, _ctx, cursors) {
    return cursors.kill(((command.cursors as unknown[]) ?? []).map(toNumber));
  },

  insert(command, db, ctx) {
    const collection = ensureCollection(ctx, db, command.insert);
    const { done, writeErrors } = eachStatement(command, 'documents', (doc) => {
      const size = (ctx.messageBytes ?? 0) > MAX_BSON_OBJECT_SIZE ? calculateObjectSize(doc) : 0;
      if (size > MAX_BSON_OBJECT_SIZE) throw new CommandError(10334, 'BSONObjectTooLarge', `object to insert too large. size in bytes: ${size}, max size: ${MAX_BSON_OBJECT_SIZE}`);
      collection.insert(doc);
    });
    return writeResult(done, writeErrors);
  },

  update(command, db, ctx) {
    const collection = ensureCollection(ctx, db, command.update);
    const upserted: Document[] = [];
    let n = 0;
    let nModified = 0;
    const { writeErrors } = eachStatement(command, 'updates', (u, i) => {
      const outcome = collection.update((u.q as Document) ?? {}, u.u as Document, {
        multi: Boolean(u.multi),
        upsert: Boolean(u.upsert),
        arrayFilters: u.arrayFilters as Document[] | undefined,
      });
      if (outcome.upsertedId !== undefined) {
        upserted.push({ index: i, _id: outcome.upsertedId });
        n += 1;
      } else {
        n += outcome.matched;
        nModified += outcome.modified;
      }
    });
    return writeResult(n, writeErrors, { nModified, ...(upserted.length > 0 ? { upserted } : {}) });
  },

  delete(command, db, ctx) {
    const collection = collectionOf(ctx, db, command.delete);
    let n = 0;
    for (const d of (command.deletes as Document[]) ?? []) {
      if (collection) n += collection.delete((d.q as Document) ?? {}, toNumber(d.limit ?? 0)).length;
    }
    return writeResult(n, []);
  },

  findAndModify(command, db, ctx) {
    const collection = ensureCollection(ctx, db, command.findAndModify);
    const query = (command.query as Document) ?? {};
    const sort = command.sort as Document | undefined;
    const fields = (command.fields as Document | undefined) ?? {};
    // The image itself, projected: a lookup by _id would find the updated document for `new: false`.
    const project = (doc: Document | undefined) => (doc ? collection.project([doc], fields)[0] : null);
    if (command.remove) {
      const [removed] = collection.delete(query, 1, sort);
      return { lastErrorObject: { n: removed ? 1 : 0 }, value: project(removed), ok: 1 };
    }
    const outcome = collection.update(query, command.update as Document, {
      upsert: Boolean(command.upsert),
      sort,
      arrayFilters: command.arrayFilters as Document[] | undefined,
    });
    const upserted = outcome.upsertedId !== undefined;
    const value = command.new ? project(outcome.after) : project(outcome.before);
    return {
      lastErrorObject: { n: upserted || outcome.matched > 0 ? 1 : 0, updatedExisting: outcome.matched > 0, ...(upserted ? { upserted: outcome.upsertedId } : {}) },
      value,
      ok: 1,
    };
  },

  aggregate(command, db, ctx, cursors) {
    const pipeline = (command.pipeline as Document[]) ?? [];
    checkPipeline(pipeline);
    const last = pipeline[pipeline.length - 1];
    const merge = last && '$merge' in last ? last.$merge : undefined;
    const collection = collectionOf(ctx, db, command.aggregate);
    let docs = collection ? collection.aggregate(merge === undefined ? pipeline : pipeline.slice(0, -1)) : [];
    if (merge !== undefined) {
      mergeInto(ctx, db, merge, docs);
      docs = [];
    }
    const batchSize = (command.cursor as Document | undefined)?.batchSize;
    return cursors.open(`${db}.${command.aggregate}`, docs, batchSize === undefined ? undefined : toNumber(batchSize));
  },

  count(command, db, ctx) {
    const collection = collectionOf(ctx, db, command.count);
    let n = collection ? collection.match((command.query as Document) ?? {}).length : 0;
    if (command.skip) n = Math.max(0, n - toNumber(command.skip));
    if (command.limit) n = Math.min(n, Math.abs(toNumber(command.limit)));
    return { n, ok: 1 };
  },

  distinct(command, db, ctx) {
    const collection = collectionOf(ctx, db, command.distinct);
    const key = String(command.key);
    const seen = new Map<string, unknown>();
    for (const doc of collection ? collection.match((command.query as Document) ?? {}) : []) {
      const raw = getPath(doc, key);
      for (const value of Array.isArray(raw) ? raw : [raw]) {
        if (value !== undefined) seen.set(JSON.stringify(value), value);
      }
    }
    return { values: [...seen.values()], ok: 1 };
  },

  createIndexes(command, db, ctx) {
    const { collection, created } = ctx.store.db(db).ensure(String(command.createIndexes));
    const before = collection.listIndexes().length;
    for (const { v: _version, ns: _ns, ...spec } of (command.indexes as Document[]) ?? []) {
      // Every option is kept as given (listIndexes reports them, as mongoose's diffIndexes compares).
      collection.createIndex({ ...spec, name: String(spec.name), key: spec.key as Record<string, number> });
    }
    return { createdCollectionAutomatically: created, numIndexesBefore: before, numIndexesAfter: collection.listIndexes().length, ok: 1 };
  },

  listIndexes(command, db, ctx, cursors) {
    const collection = collectionOf(ctx, db, command.listIndexes);
    if (!collection) throw new CommandError(26, 'NamespaceNotFound', `ns does not exist: ${db}.${command.listIndexes}`);
    return cursors.open(`${db}.$cmd.listIndexes.${command.listIndexes}`, collection.listIndexes().map((i) => ({ v: 2, ...i })), undefined);
  },

  dropIndexes(command, db, ctx) {
    const collection = collectionOf(ctx, db, command.dropIndexes);
    if (!collection) throw new CommandError(26, 'NamespaceNotFound', `ns not found ${db}.${command.dropIndexes}`);
    const before = collection.listIndexes().length;
    const index = command.index;
    if (index === '*') collection.dropAllIndexes();
    else {
      const name = typeof index === 'string' ? index : collection.listIndexes().find((i) => JSON.stringify(i.key) === JSON.stringify(index))?.name;
      if (!name || !collection.dropIndex(name)) throw new CommandError(27, 'IndexNotFound', `index not found with name [${String(name ?? JSON.stringify(index))}]`);
    }
    return { nIndexesWas: before, ok: 1 };
  },

  listCollections(command, db, ctx, cursors) {
    const infos = ctx.store
      .db(db)
      .names()
      .map((name) => ({ name, type: ctx.store.db(db).collection(name)?.options.timeseries ? 'timeseries' : 'collection', options: ctx.store.db(db).collection(name)?.options ?? {}, info: { readOnly: false }, idIndex: { v: 2, key: { _id: 1 }, name: '_id_' } }));
    const query = new Query((command.filter as Document) ?? {});
    const matching = infos.filter((i) => query.test(i));
    const docs = command.nameOnly ? matching.map(({ name, type }) => ({ name, type })) : matching;
    return cursors.open(`${db}.$cmd.listCollections`, docs, undefined);
  },

  create(command, db, ctx) {
    const options = collectionOptions(command);
    const { collection, created } = ctx.store.db(db).ensure(String(command.create));
    if (!created) throw new CommandError(48, 'NamespaceExists', `Collection ${db}.${command.create} already exists.`);
    collection.options = options;
    return { ok: 1 };
  },

  drop(command, db, ctx) {
    // MongoDB 7 answers ok for a collection that does not exist.
    const collection = collectionOf(ctx, db, command.drop);
    if (!collection) return { ok: 1 };
    ctx.store.db(db).drop(String(command.drop));
    return { ns: `${db}.${command.drop}`, nIndexesWas: collection.listIndexes().length, ok: 1 };
  },

  dropDatabase(_command, db, ctx) {
    ctx.store.dropDatabase(db);
    return { dropped: db, ok: 1 };
  },

  listDatabases(command, _db, ctx) {
    const databases = ctx.store.list().map((d) => ({ name: d.name, sizeOnDisk: 0, empty: d.names().length === 0 }));
    return { databases: command.nameOnly ? databases.map(({ name }) => ({ name })) : databases, totalSize: 0, ok: 1 };
  },
};

/** Statement lists of write commands, where per-statement options live. */
const STATEMENT_LISTS = ['updates', 'deletes'];

/**
 * Features this server would otherwise ignore and so answer wrongly: transactions (MongoDB
 * itself refuses them outside a replica set, as here) and collations (string order and equality
 * would silently be binary).
 */
function refuseUnsupported(command: Document): void {
  if (command.startTransaction || command.autocommit === false) {
    throw new CommandError(20, 'IllegalOperation', 'Transaction numbers are only allowed on a replica set member or mongos (the embedded server is a standalone)');
  }
  const statements = STATEMENT_LISTS.flatMap((list) => (Array.isArray(command[list]) ? (command[list] as Document[]) : []));
  // An index's collation is kept and enforced for uniqueness (store.ts `collated`); a query's is not.
  if (command.collation || statements.some((s) => s.collation) || (command.explain as Document | undefined)?.collation) {
    throw new CommandError(115, 'CommandNotSupported', 'collation is not supported by the embedded server');
  }
}

/** The commands this server answers; any other is CommandNotFound (59). */
export const HANDLED_COMMANDS: readonly string[] = Object.keys(handlers);

/** Runs one command; failures come back as MongoDB-shaped error replies, never as exceptions. */
export function runCommand(command: Document, db: string, ctx: CommandContext, cursors: CursorRegistry): Document {
  const name = Object.keys(command)[0];
  const handler = handlers[name];
  if (!handler) return new CommandError(59, 'CommandNotFound', `no such command: '${name}'`).toReply();
  try {
    refuseUnsupported(command);
    return handler(command, db, ctx, cursors);
  } catch (err) {
    if (err instanceof CommandError) return err.toReply();
    return new CommandError(1, 'InternalError', err instanceof Error ? err.message : String(err)).toReply();
  }
}
