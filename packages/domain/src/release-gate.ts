/**
 * SPEC R23, first part: the gate before the daily switch. A version whose queue or candidate read
 * shrank by more than `holdDrop` of current's, or with any duplicate, is held as a shadow: a
 * catalogue cut by a bad migration, a wrong filter or a half-restored MongoDB never reaches users.
 * The figures are those each version's meta records.
 */
import { expandBlocks, fullBlockRatio, type BlockRun } from './assemble';

/** Share of current's length or candidate count a new version may lose before it is held. */
export const DEFAULT_HOLD_DROP = 0.5;

/** What the gate compares, per version. */
export interface ReleaseFigures {
  version: string;
  /** Queue length. */
  length: number;
  /** Eligible videos the build read. */
  candidateCount: number;
  /** Share of blocks that are exactly 17 high + 3 new. */
  fullBlockRatio: number;
  duplicateCount: number;
  /** duplicateCount / length (0 for an empty queue). */
  duplicateRate: number;
  /** Videos in the new pool (approved in the 24 h before generatedAt). */
  freshCount: number;
}

/** The fields of a version's meta (storage's QueueMeta) that the figures are read from. */
export interface ReleaseMetaFields {
  version: string;
  length: number;
  candidateCount: number;
  newCount: number;
  duplicateCount: number;
  blocks: readonly BlockRun[];
}

/** A version's figures from its meta. */
export function releaseFigures(meta: ReleaseMetaFields): ReleaseFigures {
  return {
    version: meta.version,
    length: meta.length,
    candidateCount: meta.candidateCount,
    fullBlockRatio: fullBlockRatio(expandBlocks(meta.blocks)),
    duplicateCount: meta.duplicateCount,
    duplicateRate: meta.length > 0 ? meta.duplicateCount / meta.length : 0,
    freshCount: meta.newCount,
  };
}

export type ReleaseFigureName = 'length' | 'candidateCount' | 'fullBlockRatio' | 'duplicateRate' | 'freshCount';

/** Every figure the gate shows, in display order. */
export const RELEASE_FIGURES: readonly ReleaseFigureName[] = ['length', 'candidateCount', 'fullBlockRatio', 'duplicateRate', 'freshCount'];

/** One figure of the new version beside current's. */
export interface ComparedFigure {
  figure: ReleaseFigureName;
  next: number;
  /** Null when nothing is current, or current's value is unreadable. */
  current: number | null;
  /** (next - current) / current; null when current is null or 0. */
  change: number | null;
  /** This figure is a reason to hold. */
  holds: boolean;
}

export type HoldReasonCode = 'length-drop' | 'candidate-drop' | 'duplicates' | 'unreadable';

export interface HoldReason {
  code: HoldReasonCode;
  /** One line for the log, the audit trail and the inspector. */
  message: string;
}

/** `pass`, `first-version` (nothing to compare) and `skipped` (on-call's; reasons still listed) switch; `hold` keeps a shadow. */
export type GateOutcome = 'pass' | 'hold' | 'first-version' | 'skipped';

export interface GateVerdict {
  /** True only for `outcome: 'hold'`. */
  hold: boolean;
  outcome: GateOutcome;
  reasons: HoldReason[];
  compared: ComparedFigure[];
  holdDrop: number;
  next: ReleaseFigures;
  current: ReleaseFigures | null;
  /** Who skipped the gate, for the audit trail; set for `outcome: 'skipped'`. */
  skippedBy?: string;
}

export interface GateOptions {
  /** Defaults to DEFAULT_HOLD_DROP; must be within [0, 1]. */
  holdDrop?: number;
  /** On-call's forced rebuild that skips the gate: who asked (the audit trail names them). */
  skip?: { by: string };
}

const readable = (n: number) => Number.isFinite(n) && n >= 0;

/**
 * The verdict on `next` over `current` (null: none). A bad figure of `next` holds it; one of
 * `current` is not compared (it would pin users to a corrupt current). RangeError: `holdDrop` not in [0, 1].
 */
export function judgeRelease(next: ReleaseFigures, current: ReleaseFigures | null, options: GateOptions = {}): GateVerdict {
  const holdDrop = options.holdDrop ?? DEFAULT_HOLD_DROP;
  if (!(holdDrop >= 0 && holdDrop <= 1)) throw new RangeError(`holdDrop must be within [0, 1], got ${holdDrop}`);
  const reasons: HoldReason[] = [];
  const unreadable = RELEASE_FIGURES.filter((f) => !readable(next[f]));
  if (!readable(next.duplicateCount)) unreadable.push('duplicateRate');
  if (unreadable.length > 0) reasons.push({ code: 'unreadable', message: `version ${next.version} has unreadable figures: ${[...new Set(unreadable)].join(', ')}` });

  const dropped = (figure: 'length' | 'candidateCount') => {
    const was = current?.[figure];
    // Strictly more than holdDrop of current's: with 0.5, 500 of 1000 switches and 499 holds.
    return was !== undefined && readable(was) && readable(next[figure]) && next[figure] < was * (1 - holdDrop);
  };
  const lengthDrop = dropped('length');
  const candidateDrop = dropped('candidateCount');
  const pct = (share: number) => `${Math.round(share * 1000) / 10} %`;
  if (lengthDrop && current) reasons.push({ code: 'length-drop', message: `queue length ${next.length} is ${pct(1 - next.length / current.length)} below current's ${current.length} (holds above ${pct(holdDrop)})` });
  if (candidateDrop && current) reasons.push({ code: 'candidate-drop', message: `candidate count ${next.candidateCount} is ${pct(1 - next.candidateCount / current.candidateCount)} below current's ${current.candidateCount} (holds above ${pct(holdDrop)})` });
  const duplicates = readable(next.duplicateCount) && next.duplicateCount > 0;
  if (duplicates) reasons.push({ code: 'duplicates', message: `version ${next.version} has ${next.duplicateCount} duplicate ids` });

  const holdsOn: Record<ReleaseFigureName, boolean> = { length: lengthDrop, candidateCount: candidateDrop, duplicateRate: duplicates, fullBlockRatio: false, freshCount: false };
  const compared = RELEASE_FIGURES.map((figure): ComparedFigure => {
    const was = current && readable(current[figure]) ? current[figure] : null;
    return { figure, next: next[figure], current: was, change: was ? (next[figure] - was) / was : null, holds: holdsOn[figure] || unreadable.includes(figure) };
  });

  const base = { reasons, compared, holdDrop, next, current };
  if (!current) return { ...base, hold: false, outcome: 'first-version' };
  if (options.skip) return { ...base, hold: false, outcome: 'skipped', skippedBy: options.skip.by };
  if (reasons.length > 0) return { ...base, hold: true, outcome: 'hold' };
  return { ...base, hold: false, outcome: 'pass' };
}
