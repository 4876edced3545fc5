/**
 * In-memory databases and collections with MongoDB's write semantics: `_id` and unique
 * indexes (enforced on insert, update, upsert and index creation), `$setOnInsert`,
 * `$inc` type checks and `nModified` that counts only changed documents.
 * Query, update and aggregation operators come from mingo.
 */
import { BSONRegExp, Decimal128, EJSON, Long, ObjectId, calculateObjectSize, type Document } from 'bson';
import { update as applyModifier } from 'mingo';
import * as updateOperators from 'mingo/operators/update';
import { compare, resolve } from 'mingo/util';
import { CommandError, duplicateKeyError } from './errors';
import { Aggregator, Query, find } from './mingo';

/** An index as createIndexes gave it: every option is kept, so listIndexes reports it back. */
export interface IndexSpec {
  name: string;
  key: Record<string, number | string>;
  unique?: boolean;
  sparse?: boolean;
  /** Only documents matching it are in the index (and so in its uniqueness). */
  partialFilterExpression?: Document;
  [option: string]: unknown;
}

/** Key of a document (or an index tuple) in the maps: typed, so 1 and "1" differ. */
function keyOf(value: unknown): string {
  // ObjectIds (nearly every _id) by their 12 bytes as six UTF-16 code units after a NUL, which no
  // EJSON text starts with. A short flat string hashes and compares fast: lookups in a million-entry
  // Map took a third of the time of a prefixed hex key (and no EJSON per lookup).
  if (value instanceof ObjectId) {
    const b = value.id;
    return String.fromCharCode(0, (b[0] << 8) | b[1], (b[2] << 8) | b[3], (b[4] << 8) | b[5], (b[6] << 8) | b[7], (b[8] << 8) | b[9], (b[10] << 8) | b[11]);
  }
  // -0 is 0 to MongoDB's comparisons (canonical EJSON tells them apart), alone or in a compound key.
  const key = value === 0 ? 0 : Array.isArray(value) ? value.map((part: unknown) => (part === 0 ? 0 : part)) : value;
  return EJSON.stringify(key === undefined ? null : (key as Document), { relaxed: false });
}

/**
 * A string as an index's collation compares it for equality: strength 1 ignores case and accents,
 * 2 case only; 3 and up (ICU's default) tell apart what a binary comparison does.
 */
function collated(value: unknown, collation: Document | undefined): unknown {
  const strength = Number(collation?.strength ?? 3);
  if (typeof value !== 'string' || strength >= 3 || collation?.locale === 'simple') return value;
  const lower = value.toLowerCase().normalize('NFD');
  return strength === 1 ? lower.replace(/\p{M}/gu, '') : lower;
}

/** A value as MongoDB's error messages show it. */
function shown(value: unknown): string {
  if (value instanceof ObjectId) return `ObjectId('${value.toHexString()}')`;
  return EJSON.stringify(value === undefined ? null : (value as Document), { relaxed: true });
}

/** Whether `doc` has `field` itself (not through its prototype). */
const hasField = (doc: Document, field: string) => Object.prototype.hasOwnProperty.call(doc, field);

export function getPath(doc: Document, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Document)[part];
  }
  return value;
}

function setPath(doc: Document, path: string, value: unknown): void {
  const parts = path.split('.');
  let target = doc;
  for (const part of parts.slice(0, -1)) {
    if (typeof target[part] !== 'object' || target[part] === null) target[part] = {};
    target = target[part] as Document;
  }
  target[parts[parts.length - 1]] = value;
}

/**
 * MongoDB refuses to create a field below a value that is no document, or below an array by a name
 * that is no index (PathNotViable); an array filter (`$[]`, `$[m]`) is no field name.
 */
function checkPathViable(doc: Document, path: string): void {
  const parts = path.split('.');
  let value: unknown = doc;
  for (const [i, part] of parts.slice(0, -1).entries()) {
    value = (value as Document)[part];
    if (value === undefined) return;
    const below = parts[i + 1];
    const container = Array.isArray(value) ? /^\d+$/.test(below) || below.startsWith('$') : isPlainObject(value);
    if (!container) throw new CommandError(28, 'PathNotViable', `Cannot create field '${below}' in element {${part}: ${shown(value)}}`);
  }
}

/** An object literal's kind of object: not an array, Date, BSON value or other class instance. */
function isPlainObject(value: unknown): value is Document {
  return value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype;
}

/** Deep copy of plain objects and arrays; BSON values (ObjectId, Long, ...) are immutable and shared. */
export function cloneDocument<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneDocument) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (isPlainObject(value)) {
    const out: Document = {};
    for (const [k, v] of Object.entries(value)) out[k] = cloneDocument(v);
    return out as T;
  }
  return value;
}

const POSITIONAL = /^(.+?)\.\$(?=\.|$)/;
const NO_POSITIONAL_MATCH = () => new CommandError(2, 'BadValue', 'The positional operator did not find the match needed from the query.');

/** The index of the first element of the array at `arrayPath` that the filter's conditions on that array match. */
function matchedIndex(doc: Document, arrayPath: string, filter: Document): number {
  const array = getPath(doc, arrayPath);
  const conditions = Object.fromEntries(Object.entries(filter).filter(([field]) => field === arrayPath || field.startsWith(`${arrayPath}.`)));
  if (!Array.isArray(array) || Object.keys(conditions).length === 0) throw NO_POSITIONAL_MATCH();
  const query = new Query(conditions);
  for (let i = 0; i < array.length; i++) {
    const probe: Document = {};
    setPath(probe, arrayPath, [array[i]]);
    if (query.test(probe)) return i;
  }
  throw NO_POSITIONAL_MATCH();
}

/**
 * The positional `$` (`arr.$.field`): each path's `$` becomes the index of the array element the
 * query matched in this document, as MongoDB resolves it per document.
 */
function resolvePositional(spec: Document, doc: Document, filter: Document): Document {
  let resolved: Document | undefined;
  for (const [operator, fields] of Object.entries(spec)) {
    if (fields === null || typeof fields !== 'object' || !Object.keys(fields as Document).some((path) => POSITIONAL.test(path))) continue;
    const renamed: Document = {};
    for (const [path, value] of Object.entries(fields as Document)) {
      const arrayPath = POSITIONAL.exec(path)?.[1];
      renamed[arrayPath ? path.replace(POSITIONAL, `${arrayPath}.${matchedIndex(doc, arrayPath, filter)}`) : path] = value;
    }
    resolved = { ...(resolved ?? spec), [operator]: renamed };
  }
  return resolved ?? spec;
}

/**
 * A projection that only includes (or only excludes) top-level fields, as a function that applies
 * it; undefined for anything else (dotted paths, operators), which mingo applies. The common case
 * (a build's read names a few fields of every document) then costs one small object per document
 * instead of mingo's generic projection, which took over half of a large find's time.
 * Values are shared with the stored document: objects in it are never changed in place (an
 * in-place `$set` replaces scalars and Dates, never mutates them).
 */
function topLevelProjection(projection: Document): ((doc: Document) => Document) | undefined {
  const entries = Object.entries(projection);
  if (entries.some(([field, v]) => field.includes('.') || field.startsWith('$') || (v !== 0 && v !== 1 && v !== true && v !== false))) return undefined;
  const others = entries.filter(([field]) => field !== '_id');
  const idShown = projection._id === undefined || projection._id === 1 || projection._id === true;
  // `{_id: 1}` alone is an inclusion (only `_id`), `{_id: 0}` alone an exclusion.
  const inclusion = others.length > 0 ? others.some(([, v]) => v === 1 || v === true) : idShown;
  if (inclusion && others.some(([, v]) => v === 0 || v === false)) return undefined; // mixed: mingo's error
  const listed = new Set(others.map(([field]) => field));
  // Fields keep the stored document's order, `_id` first, as MongoDB returns them.
  return (doc) => {
    const out: Document = {};
    for (const field in doc) {
      if (field === '_id' ? idShown : listed.has(field) === inclusion) out[field] = doc[field];
    }
    return out;
  };
}

const IMMUTABLE_ID = () => new CommandError(66, 'ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");

/** Every path an update names, per operator field; a `$rename` names its target too. */
function namedPaths(modifier: Document): string[] {
  const paths: string[] = [];
  for (const [operator, fields] of Object.entries(modifier)) {
    if (fields === null || typeof fields !== 'object') continue;
    for (const [path, value] of Object.entries(fields as Document)) {
      paths.push(path);
      if (operator === '$rename' && typeof value === 'string') paths.push(value);
    }
  }
  return paths;
}

/**
 * `modifier` without a `$set` of `_id` to the value it already has (MongoDB accepts that as a
 * no-op); any other update of `_id` (another value, `$unset`, `$rename`, a sub-path) is ImmutableField.
 */
function withoutUnchangedId(modifier: Document, id: unknown): Document {
  const idPaths = namedPaths(modifier).filter((path) => path === '_id' || path.startsWith('_id.'));
  if (idPaths.length === 0) return modifier;
  const set = modifier.$set as Document | undefined;
  if (idPaths.length > 1 || !set || !hasField(set, '_id') || keyOf(set._id) !== keyOf(id)) throw IMMUTABLE_ID();
  const { _id: unchanged, ...rest } = set;
  const { $set: replaced, ...others } = modifier;
  return Object.keys(rest).length > 0 ? { ...others, $set: rest } : others;
}

/**
 * A copy of `doc` that `modifier` may change: the top-level fields it names are deep-copied, the
 * others shared with `doc`. Objects in stored documents are never changed in place (an update
 * stores a new document; see `inPlaceSet` for the one exception, which only replaces scalars), so
 * sharing is safe, and a one-field update of a large document no longer copies it all.
 */
function copyForUpdate(doc: Document, modifier: Document): Document {
  const next: Document = { ...doc };
  for (const path of namedPaths(modifier)) {
    const top = path.split('.')[0];
    if (hasField(doc, top)) next[top] = cloneDocument(doc[top]);
  }
  return next;
}

/** A value a filter's equality can be tested on with `===` (NaN is left to mingo), or an ObjectId (by its 12 bytes). */
type EqualityScalar = string | number | boolean | ObjectId;
const isEqualityScalar = (value: unknown): value is EqualityScalar =>
  typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && !Number.isNaN(value)) || value instanceof ObjectId;

/** Equality of two `EqualityScalar`s as MongoDB's: an ObjectId equals only an ObjectId of the same bytes. */
const sameEqualityScalar = (a: EqualityScalar, b: EqualityScalar) => (a instanceof ObjectId ? b instanceof ObjectId && a.equals(b) : a === b);

/**
 * For a filter of top-level equalities and `$ne`s to strings, numbers, booleans and ObjectIds (the
 * build's eligibility filter, a record's key), a direct test of a document; undefined for any
 * other filter. The test answers undefined for a document whose field holds anything but such a
 * value or nothing (an array matches by its elements, a BSON wrapper by its value): mingo decides
 * those. Over a million documents, mingo's generic matching took seconds per scan.
 */
function scalarEqualityMatcher(filter: Document): ((doc: Document) => boolean | undefined) | undefined {
  const conditions: Array<{ field: string; value: EqualityScalar; equal: boolean }> = [];
  for (const [field, condition] of Object.entries(filter)) {
    if (field.startsWith('$') || field.includes('.')) return undefined;
    if (isEqualityScalar(condition)) {
      conditions.push({ field, value: condition, equal: true });
      continue;
    }
    const operators = isOperatorObject(condition) ? Object.keys(condition) : [];
    if (operators.length !== 1 || (operators[0] !== '$eq' && operators[0] !== '$ne') || !isEqualityScalar(condition[operators[0]])) return undefined;
    conditions.push({ field, value: condition[operators[0]] as EqualityScalar, equal: operators[0] === '$eq' });
  }
  return (doc) => {
    let matches = true;
    for (const { field, value, equal } of conditions) {
      const stored: unknown = doc[field];
      if (stored === undefined || stored === null) {
        if (equal) matches = false;
        continue;
      }
      if (!isEqualityScalar(stored)) return undefined;
      if (sameEqualityScalar(value, stored) !== equal) matches = false;
    }
    return matches;
  };
}

const isOperatorObject = (value: unknown): value is Document => isPlainObject(value) && Object.keys(value).some((k) => k.startsWith('$'));

/** A regular expression: a filter's pattern, not an equality (except under `$eq`). */
const isPattern = (value: unknown) => value instanceof RegExp || value instanceof BSONRegExp;

/** The value a filter pins `field` to by equality, if it does. */
function equalityValue(filter: Document, field: string): { found: boolean; value?: unknown } {
  if (!(field in filter)) return { found: false };
  const condition = filter[field];
  if (isPattern(condition)) return { found: false };
  if (!isOperatorObject(condition)) return { found: true, value: condition };
  const ops = Object.keys(condition);
  if (ops.length === 1 && ops[0] === '$eq') return { found: true, value: condition.$eq };
  return { found: false };
}

function isNumeric(value: unknown): boolean {
  if (typeof value === 'number') return true;
  const bsontype = (value as { _bsontype?: string } | null)?._bsontype;
  return bsontype === 'Long' || bsontype === 'Int32' || bsontype === 'Double' || bsontype === 'Decimal128';
}

/**
 * `$inc` of fields holding a Decimal128 (or an Int64 kept as one), which mingo cannot add to:
 * added here by value, keeping the field's type as MongoDB does (counters are integers, so a
 * double sum is exact). Returns the modifier without those paths.
 */
function incrementBsonNumbers(doc: Document, modifier: Document): { rest: Document; changed: boolean } {
  const inc = modifier.$inc as Document | undefined;
  if (!inc) return { rest: modifier, changed: false };
  const left: Document = {};
  let changed = false;
  for (const [path, amount] of Object.entries(inc)) {
    const current = getPath(doc, path) as { _bsontype?: string } | undefined;
    const by = Number(String(amount));
    if (current?._bsontype === 'Decimal128') setPath(doc, path, Decimal128.fromString(String(Number(String(current)) + by)));
    else if (current?._bsontype === 'Long') setPath(doc, path, Long.fromNumber(Number(String(current)) + by));
    else {
      left[path] = amount;
      continue;
    }
    changed ||= by !== 0;
  }
  const { $inc: ignored, ...others } = modifier;
  return { rest: Object.keys(left).length > 0 ? { ...others, $inc: left } : others, changed };
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  const bsontype = (value as { _bsontype?: string })._bsontype;
  if (bsontype) return bsontype.toLowerCase();
  return typeof value === 'object' ? 'object' : typeof value;
}

export type UpdateSpec = Document | Document[];

type UpdateOperator = (expr: unknown, arrayFilters?: Document[], options?: unknown) => (doc: Document) => string[];
// eslint-disable-next-line no-restricted-syntax -- mingo's operator table is typed for its own dispatcher, not for direct calls
const UPDATE_OPERATORS = updateOperators as unknown as Record<string, UpdateOperator>;

/**
 * MongoDB's path-conflict rule: one update may not name the same path twice, or a path and a
 * prefix of it (`a` and `a.b`). Siblings (`a.0.x`, `a.1.x`) and different array filters
 * (`a.$[m].x`, `a.$[o].x`) do not conflict. $rename's target counts as a path.
 */
function checkPathConflicts(modifier: Document): void {
  const sorted = namedPaths(modifier).sort();
  for (let i = 1; i < sorted.length; i++) {
    const [shorter, longer] = [sorted[i - 1], sorted[i]];
    if (longer === shorter || longer.startsWith(`${shorter}.`)) {
      throw new CommandError(40, 'ConflictingUpdateOperators', `Updating the path '${longer}' would create a conflict at '${shorter}'`);
    }
  }
}

/**
 * Applies update operators in place; true when the document changed. Without arrayFilters the
 * operators run directly: mingo's `update()` rebuilds its operator registry on every call,
 * which made bulk updates ~50x slower.
 */
function applyOperators(doc: Document, modifier: Document, arrayFilters?: Document[]): boolean {
  const unknown = Object.keys(modifier).find((op) => !UPDATE_OPERATORS[op]);
  if (unknown) throw new CommandError(9, 'FailedToParse', `Unknown modifier: ${unknown}. Expected a valid update modifier or pipeline-style update specified as an array`);
  if ((arrayFilters && arrayFilters.length > 0) || namedPaths(modifier).some((path) => path.includes('$['))) {
    // One path at a time: mingo rejects two array-filter paths under one array ('a.$[m].x' and
    // 'a.$[o].x', or 'a.$[].x' and 'a.$[].y') as a conflict, which MongoDB allows; real conflicts were refused above.
    let changed = false;
    for (const [op, fields] of Object.entries(modifier)) {
      for (const [path, value] of Object.entries(fields as Document)) {
        if (applyModifier(doc, { [op]: { [path]: value } } as never, arrayFilters, undefined, { cloneMode: 'deep' }).length > 0) changed = true;
      }
    }
    return changed;
  }
  let changed = false;
  for (const [op, expr] of Object.entries(modifier)) {
    const scalars = op === '$set' ? scalarSet(expr as Document) : undefined;
    const direct = scalars ? setScalars(doc, scalars) : undefined;
    if (direct !== undefined) changed ||= direct;
    else if (UPDATE_OPERATORS[op](cloneDocument(expr))(doc).length > 0) changed = true;
  }
  return changed;
}

/** A value `$set` may assign and compare directly: a number, string, boolean, null or Date. */
function isScalar(value: unknown): value is number | string | boolean | null | Date {
  return value === null || value instanceof Date || typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean';
}

function sameScalar(a: unknown, b: unknown): boolean {
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

/**
 * The fields of a `$set` that assigns scalars to top-level fields, which `setScalars` applies
 * directly; undefined for any other `$set`, which mingo applies: mingo builds a path graph per
 * document, which made a large daily score write-back server-bound.
 */
function scalarSet(fields: Document): Document | undefined {
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) return undefined;
  return Object.entries(fields).every(([path, value]) => !path.includes('.') && isScalar(value)) ? fields : undefined;
}

/**
 * Applies a `scalarSet` to `doc` when the fields it names hold scalars or nothing; true when a
 * value changed. Undefined (nothing done) when one holds an object or array: mingo replaces those.
 */
function setScalars(doc: Document, fields: Document): boolean | undefined {
  for (const path of Object.keys(fields)) {
    if (hasField(doc, path) && !isScalar(doc[path])) return undefined;
  }
  let changed = false;
  for (const [path, value] of Object.entries(fields)) {
    const stored = value instanceof Date ? new Date(value.getTime()) : value;
    if (hasField(doc, path)) {
      if (sameScalar(doc[path], value)) continue;
      doc[path] = stored;
    } else {
      // Not `doc[path] = stored`: V8 turns an object with many properties into a slow dictionary
      // when a keyed store adds one (measured: +1.4 KB a document, 1.46 GB held at a million);
      // defining the property keeps its fast layout.
      Object.defineProperty(doc, path, { value: stored, writable: true, enumerable: true, configurable: true });
    }
    changed = true;
  }
  return changed;
}

export class Collection {
  /** Documents in insertion order, keyed by `_id`: the `_id` index. */
  private readonly byId = new Map<string, Document>();
  private readonly indexes: IndexSpec[] = [{ name: '_id_', key: { _id: 1 } }];
  /** Unique index name -> (key tuple -> document). */
  private readonly uniqueMaps = new Map<string, Map<string, Document>>();
  /**
   * Unique index name -> its documents whose key holds an array. MongoDB indexes each element of
   * one; the map keys the whole array, so while any is there a filter on the index is not
   * answered from the map (`candidates`).
   */
  private readonly multikey = new Map<string, Set<Document>>();

  /** The options the collection was created with (`create`), reported by listCollections. */
  options: Document = {};
  /** BSON bytes of a capped collection's documents, kept as they come and go (its `size` bound). */
  private cappedBytes = 0;

  constructor(
    readonly db: Database,
    readonly name: string,
  ) {}

  all(): Document[] {
    return [...this.byId.values()];
  }

  listIndexes(): IndexSpec[] {
    return this.indexes.map((i) => ({ ...i }));
  }

  /** The duplicate-key error for `doc` on `index`, naming the colliding values as MongoDB does. */
  private duplicateOn(index: IndexSpec, doc: Document): CommandError {
    const keyValue = Object.fromEntries(Object.keys(index.key).map((field) => [field, getPath(doc, field) ?? null]));
    return duplicateKeyError(this.ns, index.name, index.key, keyValue);
  }

  private uniqueKey(index: IndexSpec, doc: Document): string {
    return keyOf(Object.keys(index.key).map((field) => collated(getPath(doc, field) ?? null, index.collation as Document | undefined)));
  }

  private readonly partialFilters = new Map<string, Query>();

  /** Whether `doc` is in `index`: a partial index holds only matches, a sparse one only documents with a key field. */
  private inIndex(index: IndexSpec, doc: Document): boolean {
    if (index.sparse && Object.keys(index.key).every((field) => getPath(doc, field) === undefined)) return false;
    if (!index.partialFilterExpression) return true;
    let filter = this.partialFilters.get(index.name);
    if (!filter) {
      filter = new Query(index.partialFilterExpression);
      this.partialFilters.set(index.name, filter);
    }
    return filter.test(doc);
  }

  private uniqueIndexes(): IndexSpec[] {
    return this.indexes.filter((i) => i.unique);
  }

  /** Throws E11000 when `doc` collides with a document other than `self` on a unique index. */
  private checkUnique(doc: Document, self?: Document): void {
    const existing = this.byId.get(keyOf(doc._id));
    if (existing && existing !== self) throw duplicateKeyError(this.ns, '_id_', { _id: 1 }, { _id: doc._id });
    for (const index of this.uniqueIndexes()) {
      if (!this.inIndex(index, doc)) continue;
      const holder = this.uniqueMaps.get(index.name)!.get(this.uniqueKey(index, doc));
      if (holder && holder !== self) throw this.duplicateOn(index, doc);
    }
  }

  private addToIndexes(doc: Document): void {
    this.byId.set(keyOf(doc._id), doc);
    if (this.options.capped) this.cappedBytes += calculateObjectSize(doc);
    for (const index of this.uniqueIndexes()) if (this.inIndex(index, doc)) this.addToUnique(index, this.uniqueMaps.get(index.name)!, doc);
  }

  private addToUnique(index: IndexSpec, map: Map<string, Document>, doc: Document): void {
    map.set(this.uniqueKey(index, doc), doc);
    if (Object.keys(index.key).some((field) => Array.isArray(getPath(doc, field)))) this.multikey.get(index.name)!.add(doc);
  }

  private removeFromIndexes(doc: Document): void {
    this.byId.delete(keyOf(doc._id));
    if (this.options.capped) this.cappedBytes -= calculateObjectSize(doc);
    for (const index of this.uniqueIndexes()) {
      const map = this.uniqueMaps.get(index.name)!;
      const key = this.uniqueKey(index, doc);
      if (map.get(key) === doc) map.delete(key);
      this.multikey.get(index.name)!.delete(doc);
    }
  }

  get ns(): string {
    return `${this.db.name}.${this.name}`;
  }

  /** Stores `input` as MongoDB does (`_id` first, generated when absent); the stored document. */
  insert(input: Document): Document {
    const { _id, ...rest } = input;
    const doc = { _id: _id ?? new ObjectId(), ...rest };
    this.checkUnique(doc);
    this.addToIndexes(doc);
    if (this.options.capped) this.trimCapped();
    return doc;
  }

  /** A capped collection keeps its newest documents within `max` documents and `size` bytes (insertion order). */
  private trimCapped(): void {
    const max = Number(this.options.max ?? 0);
    const size = Number(this.options.size ?? 0);
    const oldest = () => this.byId.values().next().value!;
    while (max > 0 && this.byId.size > max) this.removeFromIndexes(oldest());
    while (size > 0 && this.cappedBytes > size && this.byId.size > 1) this.removeFromIndexes(oldest());
  }

  /**
   * Documents that may match `filter`: a map lookup when the filter pins `_id` or all fields of
   * a unique index by equality (or `_id` by `$in`), otherwise every document.
   */
  private candidates(filter: Document): { docs: Document[]; exact: boolean } {
    // `exact`: the lookup alone decides the match (the filter has no other condition).
    const onlyKeys = (fields: string[]) => Object.keys(filter).length === fields.length;
    const id = equalityValue(filter, '_id');
    if (id.found) {
      const doc = this.byId.get(keyOf(id.value));
      return { docs: doc ? [doc] : [], exact: onlyKeys(['_id']) };
    }
    const idCondition = filter._id;
    if (isOperatorObject(idCondition) && Object.keys(idCondition).length === 1 && Array.isArray(idCondition.$in) && !idCondition.$in.some(isPattern)) {
      const docs = new Set((idCondition.$in as unknown[]).map((value) => this.byId.get(keyOf(value))).filter((doc) => doc !== undefined));
      return { docs: [...docs], exact: onlyKeys(['_id']) };
    }
    for (const index of this.uniqueIndexes()) {
      // A partial or sparse index holds only some documents: its map cannot answer for the rest.
      if (index.partialFilterExpression || index.sparse || index.collation || this.multikey.get(index.name)!.size > 0) continue;
      const values = Object.keys(index.key).map((field) => equalityValue(filter, field));
      if (values.every((v) => v.found)) {
        const doc = this.uniqueMaps.get(index.name)!.get(keyOf(values.map((v) => v.value ?? null)));
        return { docs: doc ? [doc] : [], exact: false };
      }
    }
    return { docs: this.all(), exact: Object.keys(filter).length === 0 };
  }

  /** Matching documents (live references: callers must not mutate them). */
  match(filter: Document = {}, sort?: Document): Document[] {
    const { docs, exact } = this.candidates(filter);
    if (sort && Object.keys(sort).length > 0) {
      return find(docs, exact ? {} : filter).sort(sort as Record<string, 1 | -1>).all() as Document[];
    }
    if (exact) return docs;
    // A filter the direct test takes (valid by construction) compiles mingo's Query only for a
    // document it leaves undecided (a record's key lookup needs none); any other filter at once,
    // so that an invalid one fails though no document is a candidate (an upsert must not insert).
    const direct = scalarEqualityMatcher(filter);
    let query = direct ? undefined : new Query(filter);
    return docs.filter((d) => direct?.(d) ?? (query ??= new Query(filter)).test(d));
  }

  find(filter: Document, options: { sort?: Document; skip?: number; limit?: number }): Document[] {
    const wanted = options.limit ? (options.skip ?? 0) + Math.abs(options.limit) : 0;
    let docs = wanted > 0 && isPlainSort(options.sort) ? this.firstSorted(filter, options.sort, wanted) : this.match(filter, options.sort);
    if (options.skip) docs = docs.slice(options.skip);
    return options.limit ? docs.slice(0, Math.abs(options.limit)) : docs;
  }

  /**
   * The first `count` matches in `sort` order, as `$sort` orders them (mingo's compare per key,
   * ties in insertion order), without sorting every match: a sort with a small limit over a large
   * collection (the feed's MongoDB fallback, which a real server answers from an index) costs
   * O(n log count) instead of a full sort.
   */
  private firstSorted(filter: Document, sort: Record<string, 1 | -1>, count: number): Document[] {
    const docs = this.match(filter);
    // A few matches per wanted document: mingo's own sort is as quick.
    if (docs.length <= SELECTION_MIN_RATIO * count) return find(docs, {}).sort(sort).all() as Document[];
    const keys = Object.entries(sort).map(([key, direction]) => ({ key, direction, get: key.includes('.') ? (doc: Document) => resolve(doc, key) : (doc: Document) => doc[key] }));
    const order = (a: Document, b: Document) => {
      for (const { get, direction } of keys) {
        const c = sortCompare(get(a), get(b));
        if (c !== 0) return direction === -1 ? -c : c;
      }
      return 0;
    };
    const best: Document[] = [];
    for (const doc of docs) {
      if (best.length === count && order(doc, best[count - 1]) >= 0) continue;
      // After the equal ones already kept: ties stay in insertion order, as $sort leaves them.
      let low = 0;
      let high = best.length;
      while (low < high) {
        const mid = (low + high) >> 1;
        if (order(doc, best[mid]) < 0) high = mid;
        else low = mid + 1;
      }
      best.splice(low, 0, doc);
      if (best.length > count) best.pop();
    }
    return best;
  }

  /** `docs` with `projection` applied (new documents; unchanged when the projection is empty). */
  project(docs: Document[], projection: Document): Document[] {
    if (Object.keys(projection).length === 0) return docs;
    const topLevel = topLevelProjection(projection);
    if (topLevel) return docs.map(topLevel);
    // `$slice` goes with an inclusion or an exclusion projection alike (MongoDB 4.4+); mingo counts
    // it as an inclusion, so the slices are applied here, after the rest of the projection.
    const slices = Object.entries(projection).filter(([, v]) => v !== null && typeof v === 'object' && '$slice' in (v as Document));
    if (slices.length === 0) return find(docs, {}, projection).all() as Document[];
    const dotted = slices.find(([field]) => field.includes('.'));
    if (dotted) throw new CommandError(2, 'BadValue', `$slice of the embedded field '${dotted[0]}' is not supported by the embedded server`);
    const rest = Object.fromEntries(Object.entries(projection).filter(([field]) => !slices.some(([sliced]) => sliced === field)));
    const inclusion = Object.entries(rest).some(([field, v]) => field !== '_id' && (v === 1 || v === true));
    const base = inclusion ? { ...rest, ...Object.fromEntries(slices.map(([field]) => [field, 1])) } : rest;
    const projected = Object.keys(base).length > 0 ? (find(docs, {}, base).all() as Document[]) : docs.map((d) => ({ ...d }));
    for (const doc of projected) {
      for (const [field, spec] of slices) {
        const value = getPath(doc, field);
        if (!Array.isArray(value)) continue;
        const arg = (spec as Document).$slice;
        const [skip, limit] = Array.isArray(arg) ? [Number(arg[0]), Number(arg[1])] : Number(arg) >= 0 ? [0, Number(arg)] : [Number(arg), undefined];
        const start = skip < 0 ? Math.max(0, value.length + skip) : skip;
        setPath(doc, field, value.slice(start, limit === undefined ? undefined : start + limit));
      }
    }
    return projected;
  }

  /** Applies `spec` to a copy of `doc`; returns the copy, or the same object when nothing changed. */
  private applyUpdate(doc: Document, spec: UpdateSpec, arrayFilters?: Document[], inserting = false, variables?: Document): Document {
    if (Array.isArray(spec)) {
      const result = new Aggregator(spec, variables ? ({ variables } as never) : undefined).run([cloneDocument(doc)])[0] as Document;
      // A pipeline that drops _id keeps it; one that changes it is refused, as by MongoDB (it was kept
      // silently). An upsert whose filter names no _id takes the one its pipeline sets.
      if (doc._id === undefined) return result;
      if (result._id !== undefined && keyOf(result._id) !== keyOf(doc._id)) {
        throw new CommandError(66, 'ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
      }
      result._id = doc._id;
      return result;
    }
    const operators = Object.keys(spec).filter((k) => k.startsWith('$'));
    if (operators.length === 0) {
      // Replacement: keeps the stored _id, first.
      const { _id: ignored, ...replacement } = cloneDocument(spec);
      return { _id: doc._id, ...replacement };
    }
    const { $setOnInsert, ...modifier } = spec as Document;
    checkPathConflicts(inserting ? (spec as Document) : modifier);
    const next = copyForUpdate(doc, spec as Document);
    // $setOnInsert creates its fields on an upsert's insert (and is ignored otherwise).
    const { $unset: _removes, ...creating } = inserting ? (spec as Document) : modifier;
    for (const path of namedPaths(creating)) checkPathViable(next, path);
    for (const [path, amount] of Object.entries((modifier.$inc ?? {}) as Document)) {
      const current = getPath(next, path);
      // MongoDB refuses null too ("$inc ... on a field with a null value will generate an error").
      if (current !== undefined && !isNumeric(current)) {
        throw new CommandError(
          14,
          'TypeMismatch',
          `Cannot apply $inc to a value of non-numeric type. {_id: ${shown(doc._id)}} has the field '${path}' of non-numeric type ${typeName(current)}`,
        );
      }
      if (!isNumeric(amount)) throw new CommandError(14, 'TypeMismatch', `Cannot increment with non-numeric argument: {${path}: ${shown(amount)}}`);
    }
    for (const operator of ['$push', '$addToSet', '$pull', '$pullAll', '$pop']) {
      for (const path of Object.keys((modifier[operator] ?? {}) as Document)) {
        const current = getPath(next, path);
        if (current === undefined || Array.isArray(current)) continue;
        const type = typeof current === 'number' ? (Number.isInteger(current) ? 'int' : 'double') : typeName(current);
        throw new CommandError(2, 'BadValue', `The field '${path}' must be an array but is of type ${type} in document {_id: ${shown(doc._id)}}`);
      }
    }
    const { rest, changed: incremented } = incrementBsonNumbers(next, modifier);
    let changed = incremented;
    const effective = withoutUnchangedId(rest, doc._id);
    if (Object.keys(effective).length > 0) changed = applyOperators(next, effective, arrayFilters) || changed;
    if (inserting && $setOnInsert) {
      for (const [path, value] of Object.entries($setOnInsert as Document)) setPath(next, path, cloneDocument(value));
      changed = true;
    }
    if (next._id !== doc._id && keyOf(next._id) !== keyOf(doc._id)) throw IMMUTABLE_ID();
    return changed ? next : doc;
  }

  /** Replaces `previous` by `next` in storage and indexes, enforcing uniqueness first. */
  private replace(previous: Document, next: Document): void {
    if (next === previous) return;
    this.checkUnique(next, previous);
    this.removeFromIndexes(previous);
    this.addToIndexes(next);
  }

  /** `variables`: a pipeline update's `$$` variables (a `$merge` stage's `let`). */
  update(filter: Document, spec: UpdateSpec, options: { multi?: boolean; upsert?: boolean; arrayFilters?: Document[]; sort?: Document; variables?: Document }) {
    const matches = this.match(filter, options.sort);
    const targets = options.multi ? matches : matches.slice(0, 1);
    if (targets.length === 0) {
      if (!options.upsert) return { matched: 0, modified: 0 };
      const inserted = this.insert(this.applyUpdate(this.upsertSeed(filter), spec, options.arrayFilters, true));
      return { matched: 0, modified: 0, upsertedId: inserted._id, after: inserted };
    }
    let modified = 0;
    let before: Document | undefined;
    let after: Document | undefined;
    const inPlace = this.inPlaceSet(spec, options.arrayFilters);
    for (const doc of targets) {
      if (inPlace) {
        const image = before === undefined ? { ...doc } : undefined;
        const changed = setScalars(doc, inPlace);
        if (changed !== undefined) {
          if (changed) modified += 1;
          before ??= image;
          after ??= doc;
          continue;
        }
      }
      const next = this.applyUpdate(doc, Array.isArray(spec) ? spec : resolvePositional(spec, doc, filter), options.arrayFilters, false, options.variables);
      if (next !== doc) {
        this.replace(doc, next);
        modified += 1;
      }
      before ??= doc;
      after ??= next;
    }
    return { matched: targets.length, modified, before, after };
  }

  /**
   * The fields of an update that may change stored documents in place: a lone `$set` of scalars
   * to top-level fields that no unique index, partial index or capped size depends on. Such an
   * update needs no copy and no re-indexing; at a million documents, the copies' garbage
   * collection took a third of a daily score write-back. Undefined for any other update.
   */
  private inPlaceSet(spec: UpdateSpec, arrayFilters?: Document[]): Document | undefined {
    if (Array.isArray(spec) || (arrayFilters && arrayFilters.length > 0) || this.options.capped) return undefined;
    const operators = Object.keys(spec);
    const fields = operators.length === 1 && operators[0] === '$set' ? scalarSet(spec.$set as Document) : undefined;
    if (!fields) return undefined;
    const unique = this.uniqueIndexes();
    if (unique.some((index) => index.partialFilterExpression)) return undefined;
    const indexed = new Set(unique.flatMap((index) => Object.keys(index.key).map((field) => field.split('.')[0])));
    return Object.keys(fields).every((path) => path !== '_id' && !path.startsWith('$') && !indexed.has(path)) ? fields : undefined;
  }

  /** The document an upsert starts from: the filter's equality fields (MongoDB's rule). */
  private upsertSeed(filter: Document): Document {
    const seed: Document = {};
    for (const field of Object.keys(filter)) {
      if (field.startsWith('$')) continue;
      const eq = equalityValue(filter, field);
      if (eq.found) setPath(seed, field, cloneDocument(eq.value));
    }
    return seed;
  }

  delete(filter: Document, limit: number, sort?: Document): Document[] {
    const matches = this.match(filter, sort);
    const targets = limit === 1 ? matches.slice(0, 1) : matches;
    for (const doc of targets) this.removeFromIndexes(doc);
    return targets;
  }

  createIndex(spec: IndexSpec): boolean {
    if (this.indexes.some((i) => i.name === spec.name)) return false;
    if (spec.unique) {
      const map = new Map<string, Document>();
      this.multikey.set(spec.name, new Set());
      for (const doc of this.byId.values()) {
        if (!this.inIndex(spec, doc)) continue;
        if (map.has(this.uniqueKey(spec, doc))) {
          this.multikey.delete(spec.name);
          throw this.duplicateOn(spec, doc);
        }
        this.addToUnique(spec, map, doc);
      }
      this.uniqueMaps.set(spec.name, map);
    }
    this.indexes.push({ ...spec });
    return true;
  }

  /**
   * Removes what a TTL index (one date field, `expireAfterSeconds`) or a time-series collection's
   * `expireAfterSeconds` says has expired at `now`, as mongod's TTL monitor does; an array of
   * dates expires by its earliest.
   */
  expire(now: number): void {
    const rules = this.indexes.filter((i) => typeof i.expireAfterSeconds === 'number' && Object.keys(i.key).length === 1).map((i) => ({ field: Object.keys(i.key)[0], seconds: Number(i.expireAfterSeconds) }));
    const timeField = (this.options.timeseries as Document | undefined)?.timeField;
    if (timeField && this.options.expireAfterSeconds !== undefined) rules.push({ field: String(timeField), seconds: Number(this.options.expireAfterSeconds) });
    for (const { field, seconds } of rules) {
      for (const doc of this.all()) {
        const value = getPath(doc, field);
        const dates = (Array.isArray(value) ? value : [value]).filter((v): v is Date => v instanceof Date);
        if (dates.length > 0 && Math.min(...dates.map((d) => d.getTime())) + seconds * 1000 <= now) this.removeFromIndexes(doc);
      }
    }
  }

  dropIndex(name: string): boolean {
    const at = this.indexes.findIndex((i) => i.name === name);
    if (at <= 0) return false;
    this.indexes.splice(at, 1);
    this.uniqueMaps.delete(name);
    this.multikey.delete(name);
    this.partialFilters.delete(name);
    return true;
  }

  dropAllIndexes(): void {
    this.indexes.splice(1);
    this.uniqueMaps.clear();
    this.multikey.clear();
    this.partialFilters.clear();
  }

  aggregate(pipeline: Document[]): Document[] {
    const resolver = (name: string): Document[] => this.db.collection(name)?.all() ?? [];
    // A leading $match on an indexed equality can use the map instead of a scan.
    const first = pipeline[0];
    const source = first && '$match' in first ? this.match(first.$match as Document) : this.all();
    const rest = first && '$match' in first ? pipeline.slice(1) : pipeline;
    return new Aggregator(rest, { collectionResolver: resolver } as never).run(source) as Document[];
  }
}

export class Database {
  private readonly collections = new Map<string, Collection>();

  constructor(readonly name: string) {}

  collection(name: string): Collection | undefined {
    return this.collections.get(name);
  }

  /** The collection, created on first use as MongoDB does for writes. */
  ensure(name: string): { collection: Collection; created: boolean } {
    const created = !this.collections.has(name);
    if (created) this.collections.set(name, new Collection(this, name));
    return { collection: this.collections.get(name)!, created };
  }

  drop(name: string): boolean {
    return this.collections.delete(name);
  }

  names(): string[] {
    return [...this.collections.keys()];
  }
}

export class Store {
  private readonly databases = new Map<string, Database>();

  db(name: string): Database {
    if (!this.databases.has(name)) this.databases.set(name, new Database(name));
    return this.databases.get(name)!;
  }

  dropDatabase(name: string): void {
    this.databases.delete(name);
  }

  list(): Database[] {
    return [...this.databases.values()];
  }

  /** Seconds between TTL passes (`setParameter: {ttlMonitorSleepSecs}`), 60 as in mongod. */
  ttlMonitorSleepSecs = 60;

  expire(now = Date.now()): void {
    for (const db of this.databases.values()) for (const name of db.names()) db.collection(name)!.expire(now);
  }
}

/** Below this many matches per wanted document a full sort is used. */
const SELECTION_MIN_RATIO = 16;

/** $sort's order of two values: mingo's compare, a missing value equal to null (as MongoDB and mingo's grouping have it). */
function sortCompare(a: unknown, b: unknown): number {
  // The common cases without mingo's type dispatch: two dates, two numbers.
  if (a instanceof Date && b instanceof Date) return Math.sign(a.getTime() - b.getTime());
  if (typeof a === 'number' && typeof b === 'number' && !Number.isNaN(a) && !Number.isNaN(b)) return Math.sign(a - b);
  return compare(a ?? null, b ?? null);
}

/** A sort of plain fields, each 1 or -1 (no `$natural`, no `$meta`). */
function isPlainSort(sort: Document | undefined): sort is Record<string, 1 | -1> {
  return sort !== undefined && Object.keys(sort).length > 0 && Object.entries(sort).every(([key, direction]) => !key.startsWith('$') && (direction === 1 || direction === -1));
}
