/** Interactions of a signed-in user (SPEC R3, R4); shares also accept guests (counted for users only). */
import { Router, type Response } from 'express';
import Joi from 'joi';
import { requestIdOf, ROUTING } from '@feed/http';
import { logger } from '@feed/logger';
import { DeadlineExceededError, withDeadline, type CounterKind } from '@feed/storage';
import { identify, requireUser, userIdentity } from '../http/identity';
import type { VariantReadout } from '../feed/variant-readout';
import { objectId, validate, validateBody, vidBody } from '../http/validate';
import type { InteractionService, ToggleOutcome, Written } from '../interactions/interaction-service';

export const MAX_COMMENT_LENGTH = 500;

// Checked as sent, then trimmed (the route): the limits the document states are the ones the server applies.
export const commentBody = Joi.object<{ vid: string; content: string }>({
  vid: objectId.required(),
  content: Joi.string().min(1).max(MAX_COMMENT_LENGTH).pattern(/\S/, 'not blank').required().description(`1-${MAX_COMMENT_LENGTH} characters as sent, not only whitespace; stored trimmed`),
});
export const shareBody = Joi.object<{ videoID?: string }>({ videoID: objectId.description('Without it nothing is counted (old clients)') }).unknown(true);
export const idempotencyKey = Joi.string().pattern(/^[A-Za-z0-9_.:-]{8,128}$/, 'Idempotency-Key (8-128 characters of A-Z, a-z, 0-9, _ . : -)');

/**
 * `readout` counts each first like, collect, comment and share for the user's variant (D7: a toggled like is one like).
 * An interaction's MongoDB work is answered within `mongoDeadlineMs` (R17). A record write past it
 * is a 503, and the client's retry is safe (each kind's unique record makes the first success
 * decidable). Writes answered 503 may still land when MongoDB resumes: their first success is
 * counted then (`counted` follows the writes, not the answer), since the retry finds it done and
 * counts nothing. Once the record is written the action succeeded: its tally gets what is left of
 * the budget, and a tally still running then is stopped and answered 2xx all the same, logged and
 * counted in `onTallyDeferred` (the record stays dirty until the video's next tally or the repair
 * job counts it, as after a crash).
 */
export function interactionRoutes(
  service: InteractionService,
  jwtSecret: string,
  readout: Pick<VariantReadout, 'record' | 'recordShare'>,
  mongoDeadlineMs: number,
  onTallyDeferred: (kind: CounterKind) => void,
): Router {
  const router = Router(ROUTING);
  const counted = async <T>(res: Response, kind: CounterKind, action: Promise<Written<T>>, count?: (outcome: T) => Promise<void>): Promise<T> => {
    const started = performance.now();
    const counting = action.then(({ outcome }) => count?.(outcome));
    counting.catch(() => undefined); // awaited below, or by no one once the request answered 503
    const { outcome, tally, stop } = await withDeadline(action, mongoDeadlineMs, 'MongoDB writes of the interaction').catch((err: unknown) => {
      // Answered 503: a record that lands later gets no tally from this request (the next one or the repair job counts it).
      action.then(({ stop: stopLate }) => stopLate(), () => undefined);
      throw err;
    });
    const left = Math.max(0, mongoDeadlineMs - (performance.now() - started));
    // False also when the tally ran out of attempts: the record is left dirty, as when it is stopped.
    const inTime = await withDeadline(tally, left, 'the tally of the interaction').catch((err: unknown) => {
      if (err instanceof DeadlineExceededError) return false;
      throw err;
    });
    if (!inTime) {
      // Its rounds would only slow the writes of the requests that keep a hot video busy.
      stop();
      onTallyDeferred(kind);
      logger.warn('interaction tally deferred', { requestId: requestIdOf(res), kind, budgetMs: mongoDeadlineMs });
    }
    await counting;
    return outcome;
  };
  const toggle = (path: string, kind: CounterKind, action: (vid: string, userId: string) => Promise<Written<ToggleOutcome>>, engagement?: 'like' | 'collect') =>
    router.post(path, async (req, res) => {
      const { userId } = requireUser(req, jwtSecret);
      const { vid } = validateBody(vidBody, req);
      const { active, changed } = await counted(res, kind, action(vid, userId), async ({ first }) => {
        if (engagement && first) await readout.record(userIdentity(userId), engagement);
      });
      res.json({ active, changed });
    });
  toggle('/api/app/vid/like', 'likes', service.like, 'like');
  toggle('/api/app/vid/unlike', 'likes', service.unlike);
  toggle('/api/app/vid/collect', 'collects', service.collect, 'collect');
  toggle('/api/app/vid/uncollect', 'collects', service.uncollect);

  router.post('/api/app/vid/comment', async (req, res) => {
    const { userId } = requireUser(req, jwtSecret);
    const { vid, content } = validateBody(commentBody, req);
    const header = req.header('idempotency-key');
    const key = header === undefined ? undefined : validate(idempotencyKey.label('Idempotency-Key'), header);
    const result = await counted(res, 'comments', service.comment(vid, userId, content.trim(), key), async ({ created }) => {
      if (created) await readout.record(userIdentity(userId), 'comment');
    });
    res.status(result.created ? 201 : 200).json(result);
  });

  router.delete('/api/app/vid/comment/:id', async (req, res) => {
    const { userId } = requireUser(req, jwtSecret);
    const id = validate(objectId.label('id'), req.params.id);
    res.json(await counted(res, 'comments', service.deleteComment(id, userId)));
  });

  router.post('/api/app/share/output', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { videoID } = validateBody(shareBody, req);
    // A guest's share moves no counter (R4) but is engagement of the guest's variant all the same.
    const share = await counted(res, 'shares', service.share(videoID, identity.userId), async ({ first, valid }) => {
      if (valid && videoID !== undefined) await readout.recordShare(identity, videoID, first);
    });
    res.json({ ok: true, counted: share.counted });
  });
  return router;
}
