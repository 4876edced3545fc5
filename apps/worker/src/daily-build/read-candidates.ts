/**
 * The read phase: eligible videos streamed from a cursor straight into candidate columns.
 *
 * The cursor returns raw BSON (`raw: true`) and the few projected fields are read from the bytes:
 * no document object is made per video. Deserialised documents cost ~10 KB of garbage a video,
 * enough of it promoted that the old heap grew by ~130 MB before its first collection.
 */
import { CandidateColumns, ELIGIBLE_FILTER, ID_BYTES, recommendScore, type RecommendCounters } from '@feed/domain';
import type { VideoModel } from '@feed/storage';

/** Documents per cursor batch: one await per batch, never per document. */
const READ_BATCH = 2000;

const PROJECTION = { _id: 1, reviewAt: 1, recommendLikeCount: 1, recommendCollectCount: 1, recommendCommentCount: 1, recommendShareCount: 1, recommendScore: 1, recommendScoreAt: 1 };

export async function readCandidates(videos: VideoModel, signal?: AbortSignal): Promise<CandidateColumns> {
  // The count sizes the columns once; videos approved during the read make them grow.
  const candidates = new CandidateColumns(await videos.countDocuments(ELIGIBLE_FILTER));
  const cursor = videos.collection.find<Uint8Array>(ELIGIBLE_FILTER, { projection: PROJECTION, batchSize: READ_BATCH, raw: true });
  try {
    while (await cursor.hasNext()) {
      signal?.throwIfAborted();
      for (const document of cursor.readBufferedDocuments()) pushRawCandidate(candidates, document);
    }
  } finally {
    await cursor.close();
  }
  return candidates;
}

const BSON_DOUBLE = 0x01;
const BSON_STRING = 0x02;
const BSON_DOCUMENT = 0x03;
const BSON_ARRAY = 0x04;
const BSON_OBJECT_ID = 0x07;
const BSON_BOOLEAN = 0x08;
const BSON_DATE = 0x09;
const BSON_NULL = 0x0a;
const BSON_INT32 = 0x10;
const BSON_INT64 = 0x12;

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

/**
 * Appends one raw BSON video (the projection's top-level fields) to the columns. Counters of any
 * numeric BSON type count; anything else counts as 0, as recommendScore treats a non-number.
 */
export function pushRawCandidate(candidates: CandidateColumns, bytes: Uint8Array): void {
  counters.recommendLikeCount = counters.recommendCollectCount = counters.recommendCommentCount = counters.recommendShareCount = 0;
  let idAt = -1;
  let reviewAt: number | null = null;
  let storedScore: number | null = null;
  let scoreAtSet = false;
  const end = int32At(bytes, 0) - 1;
  let at = 4;
  while (at < end) {
    const type = bytes[at++];
    const nameStart = at;
    while (bytes[at] !== 0) at++;
    const field = FIELDS[fieldAt(bytes, nameStart, at)];
    at++;
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
      case BSON_OBJECT_ID:
        if (field === '_id') idAt = at;
        at += ID_BYTES;
        break;
      case BSON_NULL:
        break;
      case BSON_BOOLEAN:
        at += 1;
        break;
      case BSON_STRING:
        at += 4 + int32At(bytes, at);
        break;
      case BSON_DOCUMENT:
      case BSON_ARRAY:
        at += int32At(bytes, at);
        break;
      default:
        throw new Error(`video field ${String(field)} has BSON type 0x${type.toString(16)}, which the build does not read`);
    }
    if (field === 'reviewAt') reviewAt = type === BSON_DATE ? number : null;
    else if (field === 'recommendScoreAt') scoreAtSet = type === BSON_DATE;
    else if (field === 'recommendScore') storedScore = type === BSON_DATE ? null : number;
    else if (field !== undefined && field !== '_id' && type !== BSON_DATE) counters[field] = number ?? 0;
  }
  if (idAt < 0) throw new Error('a video document without an ObjectId _id');
  // A score counts as written back only with its recommendScoreAt (R2); else it is written.
  candidates.push(bytes, recommendScore(counters), reviewAt, scoreAtSet ? storedScore : null, idAt);
}
