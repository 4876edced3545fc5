/**
 * The read phase: eligible videos streamed from a cursor into candidate columns. The cursor returns
 * raw BSON and the projected fields are read from the bytes: deserialised documents cost ~10 KB of
 * garbage a video and grew the old heap by ~130 MB before its first collection.
 */
import { ELIGIBLE_FILTER, finiteOrNull, MAX_RECOMMEND_SCORE, numericValue, recommendScore, type RecommendCounters } from '@feed/domain';
import { CandidateColumns, ID_BYTES } from './candidate-columns';
import { mongo } from 'mongoose';
import type { Logger } from '@feed/logger';
import type { VideoModel } from '@feed/storage';

/** Documents per cursor batch: one await per batch, never per document. */
const READ_BATCH = 2000;

const PROJECTION = { _id: 1, reviewAt: 1, recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1, recommendScore: 1, recommendScoreAt: 1 };

/** Why a document was skipped or corrected (R1a), the labels of `feed_build_documents_skipped_total`; `saturated-score`: capped. */
export type DocumentIssue = 'unreadable-id' | 'unreadable-document' | 'non-numeric-field' | 'saturated-score';

export type DocumentIssues = Partial<Record<DocumentIssue, number>>;

const ISSUE_EVENTS: Record<DocumentIssue, string> = {
  'unreadable-id': 'video skipped by the build',
  'unreadable-document': 'video skipped by the build',
  'non-numeric-field': 'video field read as 0',
  'saturated-score': 'video score saturated',
};

/** Documents logged one by one per build; the rest are only counted. */
const ISSUES_LOGGED = 20;

export async function readCandidates(videos: VideoModel, logger: Logger, signal?: AbortSignal) {
  // The count sizes the columns once; videos approved during the read make them grow.
  const candidates = new CandidateColumns(await videos.countDocuments(ELIGIBLE_FILTER));
  const issues: DocumentIssues = {};
  let logged = 0;
  const cursor = videos.collection.find<Uint8Array>(ELIGIBLE_FILTER, { projection: PROJECTION, batchSize: READ_BATCH, raw: true });
  try {
    while (await cursor.hasNext()) {
      signal?.throwIfAborted();
      for (const document of cursor.readBufferedDocuments()) {
        const issue = pushRawCandidate(candidates, document);
        if (issue === null) continue;
        issues[issue] = (issues[issue] ?? 0) + 1;
        if (logged++ < ISSUES_LOGGED) logger.warn(ISSUE_EVENTS[issue], { issue, _id: describeId(document) });
      }
    }
  } finally {
    await cursor.close();
  }
  if (logged > ISSUES_LOGGED) logger.warn('more odd video documents', { notLogged: logged - ISSUES_LOGGED, issues });
  // issues: documents skipped (unreadable-*) or read with a field taken as 0 (non-numeric-field).
  return { candidates, issues };
}

/** The document's `_id` for a log line, whatever its type (the rare path: the driver deserialises it). */
function describeId(bytes: Uint8Array): string {
  try {
    const { _id } = mongo.BSON.deserialize(bytes, { promoteValues: true }) as { _id?: unknown };
    return _id instanceof mongo.ObjectId ? _id.toHexString() : JSON.stringify(_id) ?? String(_id);
  } catch {
    return '(undecodable document)';
  }
}

// Element types of the BSON spec (bsonspec.org): each is read by value or skipped by its size.
const BSON_DOUBLE = 0x01;
const BSON_STRING = 0x02;
const BSON_DOCUMENT = 0x03;
const BSON_ARRAY = 0x04;
const BSON_BINARY = 0x05;
const BSON_UNDEFINED = 0x06;
const BSON_OBJECT_ID = 0x07;
const BSON_BOOLEAN = 0x08;
const BSON_DATE = 0x09;
const BSON_NULL = 0x0a;
const BSON_REGEX = 0x0b;
const BSON_DB_POINTER = 0x0c;
const BSON_CODE = 0x0d;
const BSON_SYMBOL = 0x0e;
const BSON_CODE_WITH_SCOPE = 0x0f;
const BSON_INT32 = 0x10;
const BSON_TIMESTAMP = 0x11;
const BSON_INT64 = 0x12;
const BSON_DECIMAL128 = 0x13;
const BSON_MIN_KEY = 0xff;
const BSON_MAX_KEY = 0x7f;

type Field = '_id' | 'reviewAt' | 'recommendScore' | 'recommendScoreAt' | keyof RecommendCounters;
const FIELDS: Field[] = ['_id', 'reviewAt', 'recommendLikeCount', 'recommendCollectCount', 'recommendCommentCount', 'recommendShareCount', 'recommendScore', 'recommendScoreAt'];
const FIELD_NAMES = FIELDS.map((name) => Uint8Array.from(name, (c) => c.charCodeAt(0)));

/** Scratch for little-endian doubles, and the one counters object reused for every video. */
const scratchBytes = new Uint8Array(8);
const scratchDouble = new Float64Array(scratchBytes.buffer);
const counters: Required<RecommendCounters> = { recommendLikeCount: 0, recommendCollectCount: 0, recommendCommentCount: 0, recommendShareCount: 0 };

function int32At(bytes: Uint8Array, at: number): number {
  return bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24);
}

function int64At(bytes: Uint8Array, at: number): number {
  return (int32At(bytes, at) >>> 0) + int32At(bytes, at + 4) * 2 ** 32;
}

function doubleAt(bytes: Uint8Array, at: number): number {
  for (let k = 0; k < 8; k++) scratchBytes[k] = bytes[at + k];
  return scratchDouble[0];
}

/** Index in FIELDS of the element name at [start, end), or -1. */
function fieldAt(bytes: Uint8Array, start: number, end: number): number {
  for (let f = 0; f < FIELD_NAMES.length; f++) {
    const name = FIELD_NAMES[f];
    if (name.length !== end - start) continue;
    let k = 0;
    while (k < name.length && name[k] === bytes[start + k]) k++;
    if (k === name.length) return f;
  }
  return -1;
}

/** A Decimal128 by value, as the read path reads it (R1a's one rule in @feed/domain); NaN when it has none. */
function decimal128At(bytes: Uint8Array, at: number): number {
  return numericValue(new mongo.Decimal128(bytes.subarray(at, at + 16))) ?? NaN;
}

/** Index of the byte after the C string starting at `at`. */
function afterCString(bytes: Uint8Array, at: number): number {
  while (bytes[at] !== 0) at++;
  return at + 1;
}

/** Thrown inside the reader for an element it cannot step over: the document is skipped. */
class UnreadableDocument extends Error {}

/**
 * Appends one raw BSON video to the columns (R1a): a counter or date of any numeric BSON type counts
 * by its value, anything else as 0 (`non-numeric-field`); a score past MAX_RECOMMEND_SCORE is capped
 * (`saturated-score`). No ObjectId `_id`, or an unknown BSON type: not appended. Returns the issue.
 */
export function pushRawCandidate(candidates: CandidateColumns, bytes: Uint8Array): DocumentIssue | null {
  try {
    return readRawCandidate(candidates, bytes);
  } catch (err) {
    if (err instanceof UnreadableDocument || err instanceof RangeError) return 'unreadable-document';
    throw err;
  }
}

function readRawCandidate(candidates: CandidateColumns, bytes: Uint8Array): DocumentIssue | null {
  counters.recommendLikeCount = counters.recommendCollectCount = counters.recommendCommentCount = counters.recommendShareCount = 0;
  let idAt = -1;
  let reviewAt: number | null = null;
  let storedScore: number | null = null;
  let scoreAtSet = false;
  let corrected = false;
  const end = int32At(bytes, 0) - 1;
  let at = 4;
  while (at < end) {
    const type = bytes[at++];
    const nameStart = at;
    at = afterCString(bytes, at);
    const field = FIELDS[fieldAt(bytes, nameStart, at - 1)];
    let number: number | null = null;
    switch (type) {
      case BSON_DOUBLE:
        number = doubleAt(bytes, at);
        at += 8;
        break;
      case BSON_INT32:
        number = int32At(bytes, at);
        at += 4;
        break;
      case BSON_INT64:
      case BSON_DATE:
        number = int64At(bytes, at);
        at += 8;
        break;
      case BSON_DECIMAL128:
        number = decimal128At(bytes, at);
        at += 16;
        break;
      case BSON_OBJECT_ID:
        if (field === '_id') idAt = at;
        at += ID_BYTES;
        break;
      case BSON_TIMESTAMP:
        at += 8;
        break;
      case BSON_NULL:
      case BSON_UNDEFINED:
      case BSON_MIN_KEY:
      case BSON_MAX_KEY:
        break;
      case BSON_BOOLEAN:
        at += 1;
        break;
      case BSON_STRING:
      case BSON_CODE:
      case BSON_SYMBOL:
        at += 4 + int32At(bytes, at);
        break;
      case BSON_DB_POINTER:
        at += 4 + int32At(bytes, at) + ID_BYTES;
        break;
      case BSON_BINARY:
        at += 4 + 1 + int32At(bytes, at);
        break;
      case BSON_REGEX:
        at = afterCString(bytes, afterCString(bytes, at));
        break;
      case BSON_DOCUMENT:
      case BSON_ARRAY:
      case BSON_CODE_WITH_SCOPE:
        at += int32At(bytes, at);
        break;
      default:
        throw new UnreadableDocument(`BSON type 0x${type.toString(16)}`);
    }
    if (field === undefined || field === '_id') continue;
    // Dates are numbers for reviewAt and recommendScoreAt only; NaN and infinities are not values.
    const value = number !== null && finiteOrNull(number) !== null && (type !== BSON_DATE || field === 'reviewAt' || field === 'recommendScoreAt') ? number : null;
    if (value === null && field !== 'recommendScore' && field !== 'recommendScoreAt') corrected = true;
    if (field === 'reviewAt') reviewAt = value ?? 0;
    else if (field === 'recommendScoreAt') scoreAtSet = value !== null;
    else if (field === 'recommendScore') storedScore = value;
    else counters[field] = value ?? 0;
  }
  if (idAt < 0) return 'unreadable-id';
  // A score counts as written back only with its recommendScoreAt (R2); else it is written.
  const score = recommendScore(counters);
  candidates.push(bytes, score, reviewAt, scoreAtSet ? storedScore : null, idAt);
  return score === MAX_RECOMMEND_SCORE ? 'saturated-score' : corrected ? 'non-numeric-field' : null;
}
