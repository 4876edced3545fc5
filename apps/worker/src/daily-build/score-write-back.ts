/**
 * The score write-back (SPEC R2): only documents whose score changed since their last
 * write-back (or that were never written) get `recommendScore` and, as `recommendScoreAt`, the
 * `generatedAt` of this build. A day on which 1 % of videos got interactions writes 1 %.
 */
import { Types } from 'mongoose';
import { ID_BYTES, type CandidateColumns } from '@feed/domain';
import type { VideoModel } from '@feed/storage';

/** Updates per unordered bulkWrite: well under MongoDB's 100,000 operations and 48 MB per batch. */
const SCORE_BATCH = 1000;

export async function writeBackScores(
  videos: VideoModel,
  candidates: CandidateColumns,
  generatedAt: Date,
  options: { signal?: AbortSignal; onBatch?: (written: number, total: number) => void | Promise<void> } = {},
): Promise<number> {
  const changed = candidates.changedScores();
  for (let start = 0; start < changed.length; start += SCORE_BATCH) {
    options.signal?.throwIfAborted();
    const batch = changed.subarray(start, start + SCORE_BATCH);
    // The driver's bulkWrite under the model: the two fields are already typed, and mongoose's
    // per-operation casting made most of the phase's garbage.
    await videos.collection.bulkWrite(
      Array.from(batch, (i) => ({
        updateOne: {
          filter: { _id: new Types.ObjectId(candidates.ids.subarray(i * ID_BYTES, (i + 1) * ID_BYTES)) },
          update: { $set: { recommendScore: candidates.scores[i], recommendScoreAt: generatedAt } },
        },
      })),
      { ordered: false },
    );
    await options.onBatch?.(start + batch.length, changed.length);
  }
  return changed.length;
}
