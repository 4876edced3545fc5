/** Why a ring candidate is served or skipped (SPEC R11, V2): one rule for the feed and for explain. */
import { isEligible } from '@feed/domain';
import type { Identity } from '../http/identity';
import type { SkipReason } from '../labels';
import type { UserFilter } from '@feed/storage';
import type { CatalogVideo } from './video-catalog';

export type Verdict = 'serve' | SkipReason;

export function judgeCandidate(id: string, video: CatalogVideo | undefined, filter: UserFilter, identity: Identity, alreadyInPage: ReadonlySet<string>): Verdict {
  if (alreadyInPage.has(id)) return 'duplicate';
  if (!video || !isEligible(video)) return 'invalid';
  if (filter.notInterested(id)) return 'not_interested';
  if (filter.viewed(id)) return 'seen';
  if (identity.userId !== undefined && video.authorId === identity.userId) return 'own';
  return 'serve';
}
