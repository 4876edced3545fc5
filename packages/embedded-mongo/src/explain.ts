/**
 * `explain` (queryPlanner verbosity): the plan this server's documented index rules would pick, in
 * MongoDB's reply shape (`queryPlanner.winningPlan` with IXSCAN/FETCH/SORT/COLLSCAN stages). The
 * server itself scans in memory; the plan says which index MongoDB would use for the same query
 * and indexes: the one whose leading key fields the filter constrains most, then the one that
 * also provides the sort.
 */
import type { Document } from 'bson';
import { CommandError } from './errors';
import type { Collection, IndexSpec } from './store';

/** Operators that never bound an index scan on their field. */
const UNBOUNDED = new Set(['$ne', '$nin', '$not', '$exists', '$where', '$expr']);

function constrains(filter: Document, field: string): boolean {
  if (!(field in filter)) return false;
  const condition = filter[field];
  if (condition === null || typeof condition !== 'object' || condition instanceof Date || Array.isArray(condition)) return true;
  const operators = Object.keys(condition as Document);
  if (!operators.every((op) => op.startsWith('$'))) return true;
  return operators.some((op) => !UNBOUNDED.has(op));
}

interface Candidate {
  index: IndexSpec;
  prefix: number;
  sortCovered: boolean;
  direction: 'forward' | 'backward';
}

/** How well `index` serves `filter` and `sort`. */
function rate(index: IndexSpec, filter: Document, sort?: Document): Candidate {
  const fields = Object.keys(index.key);
  let prefix = 0;
  while (prefix < fields.length && constrains(filter, fields[prefix])) prefix++;
  const sortFields = Object.entries(sort ?? {});
  let sortCovered = false;
  let direction: Candidate['direction'] = 'forward';
  if (sortFields.length > 0) {
    const rest = fields.slice(prefix, prefix + sortFields.length);
    const same = sortFields.every(([field, dir], i) => rest[i] === field && Number(index.key[field]) === Number(dir));
    const reversed = sortFields.every(([field, dir], i) => rest[i] === field && Number(index.key[field]) === -Number(dir));
    sortCovered = rest.length === sortFields.length && (same || reversed);
    if (reversed && !same) direction = 'backward';
  }
  return { index, prefix, sortCovered, direction };
}

export function planFor(collection: Collection | undefined, filter: Document, sort?: Document): Document {
  const collscan = { stage: 'COLLSCAN', filter, direction: 'forward' };
  const sorted = (plan: Document) => (sort && Object.keys(sort).length > 0 ? { stage: 'SORT', sortPattern: sort, memLimit: 104857600, type: 'simple', inputStage: plan } : plan);
  if (!collection) return { stage: 'EOF' };
  const candidates = collection
    .listIndexes()
    // A partial or sparse index cannot answer for every document; MongoDB uses it only when the filter implies it.
    .filter((index) => !index.partialFilterExpression && !index.sparse)
    .map((index) => rate(index, filter, sort))
    .filter((c) => c.prefix > 0 || c.sortCovered);
  if (candidates.length === 0) return sorted(collscan);
  candidates.sort((a, b) => b.prefix - a.prefix || Number(b.sortCovered) - Number(a.sortCovered) || Object.keys(a.index.key).length - Object.keys(b.index.key).length);
  const best = candidates[0];
  const ixscan = { stage: 'IXSCAN', keyPattern: best.index.key, indexName: best.index.name, isMultiKey: false, isUnique: Boolean(best.index.unique), isSparse: false, isPartial: false, direction: best.direction };
  const fetch = { stage: 'FETCH', inputStage: ixscan };
  return best.sortCovered ? fetch : sorted(fetch);
}

/** The filter and sort an explained command would run, by command. */
function queryOf(kind: string, inner: Document): { filter: Document; sort?: Document; rest?: Document[] } {
  switch (kind) {
    case 'find':
      return { filter: (inner.filter as Document) ?? {}, sort: inner.sort as Document | undefined };
    case 'count':
    case 'distinct':
      return { filter: (inner.query as Document) ?? {} };
    case 'findAndModify':
      return { filter: (inner.query as Document) ?? {}, sort: inner.sort as Document | undefined };
    case 'update':
      return { filter: ((inner.updates as Document[])?.[0]?.q as Document) ?? {} };
    case 'delete':
      return { filter: ((inner.deletes as Document[])?.[0]?.q as Document) ?? {} };
    case 'aggregate': {
      const pipeline = (inner.pipeline as Document[]) ?? [];
      const match = pipeline[0] && '$match' in pipeline[0] ? (pipeline[0].$match as Document) : {};
      const afterMatch = pipeline[0] && '$match' in pipeline[0] ? pipeline.slice(1) : pipeline;
      const sort = afterMatch[0] && '$sort' in afterMatch[0] ? (afterMatch[0].$sort as Document) : undefined;
      return { filter: match, sort, rest: sort ? afterMatch.slice(1) : afterMatch };
    }
    default:
      throw new CommandError(115, 'CommandNotSupported', `explain of '${kind}' is not supported by the embedded server`);
  }
}

export function explainCommand(inner: Document, db: string, collectionOf: (name: unknown) => Collection | undefined): Document {
  const kind = Object.keys(inner)[0];
  const name = String(inner[kind]);
  const { filter, sort, rest } = queryOf(kind, inner);
  const plan = planFor(collectionOf(name), filter, sort);
  const queryPlanner = {
    plannerVersion: 1,
    namespace: `${db}.${name}`,
    indexFilterSet: false,
    parsedQuery: filter,
    winningPlan: kind === 'count' ? { stage: 'COUNT', inputStage: plan } : plan,
    rejectedPlans: [],
  };
  const serverInfo = { host: 'embedded', port: 0, version: '7.0.0-embedded', gitVersion: 'embedded' };
  if (kind === 'aggregate' && rest && rest.length > 0) {
    return { explainVersion: '1', stages: [{ $cursor: { queryPlanner } }, ...rest], serverInfo, command: inner, ok: 1 };
  }
  return { explainVersion: '1', queryPlanner, command: inner, serverInfo, ok: 1 };
}
