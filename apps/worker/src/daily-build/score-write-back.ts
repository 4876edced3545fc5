/**
 * The score write-back (SPEC R2): only documents whose score changed since their last write-back
 * get `recommendScore` and `recommendScoreAt` (this build's `generatedAt`). Changed videos are
 * grouped by new score, one `updateMany` by `_id $in` a group, in unordered bulk writes of at most
 * SCORE_BATCH ids: fewer operations and less garbage than one `updateOne` a video.
 */
import { Types } from 'mongoose';
import { ID_BYTES, type CandidateColumns } from './candidate-columns';
import type { VideoModel } from '@feed/storage';
import { InFlight } from './in-flight';

/** Ids per unordered bulkWrite: well under MongoDB's 100,000 operations and 16 MB per command. */
const SCORE_BATCH = 1000;
/** Bulk writes in flight, so the next batch is made while MongoDB applies the last (one at a time, they took turns). */
const SCORE_IN_FLIGHT = 4;

export async function writeBackScores(
  videos: VideoModel,
  candidates: CandidateColumns,
  generatedAt: Date,
  options: { signal?: AbortSignal; onBatch?: (written: number, total: number) => void | Promise<void> } = {},
): Promise<number> {
  const { scores, ids } = candidates;
  const changed = candidates.changedScores().sort((a, b) => scores[a] - scores[b]);
  const objectId = (i: number) => new Types.ObjectId(ids.subarray(i * ID_BYTES, (i + 1) * ID_BYTES));
  const writes = new InFlight(SCORE_IN_FLIGHT);
  for (let batchStart = 0; batchStart < changed.length; batchStart += SCORE_BATCH) {
    options.signal?.throwIfAborted();
    const batchEnd = Math.min(changed.length, batchStart + SCORE_BATCH);
    const operations = [];
    for (let start = batchStart; start < batchEnd; ) {
      const score = scores[changed[start]];
      let end = start + 1;
      while (end < batchEnd && scores[changed[end]] === score) end++;
      operations.push({
        updateMany: {
          filter: { _id: { $in: Array.from(changed.subarray(start, end), objectId) } },
          update: { $set: { recommendScore: score, recommendScoreAt: generatedAt } },
        },
      });
      start = end;
    }
    // The driver's bulkWrite: mongoose's casting of typed fields made most of the phase's garbage.
    await writes.add(videos.collection.bulkWrite(operations, { ordered: false }), () => options.onBatch?.(batchEnd, changed.length));
  }
  await writes.drain();
  return changed.length;
}
