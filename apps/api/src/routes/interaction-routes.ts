/** Interactions of a signed-in user (SPEC R3, R4); shares also accept guests (counted for users only). */
import { Router } from 'express';
import Joi from 'joi';
import { ROUTING } from '@feed/http';
import { withDeadline } from '@feed/storage';
import { identify, requireUser, userIdentity } from '../http/identity';
import type { VariantReadout } from '../feed/variant-readout';
import { objectId, validate, validateBody, vidBody } from '../http/validate';
import type { InteractionService, ToggleOutcome } from '../interactions/interaction-service';

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
 * An interaction's MongoDB work is answered within `mongoDeadlineMs` (R17): past it a 503, and the
 * client's retry is safe (each kind's unique record makes the first success decidable). Writes
 * answered 503 may still land when MongoDB resumes: their first success is counted then (`counted`
 * follows the writes, not the answer), since the retry finds it done and counts nothing.
 */
export function interactionRoutes(service: InteractionService, jwtSecret: string, readout: VariantReadout, mongoDeadlineMs: number): Router {
  const router = Router(ROUTING);
  const counted = async <T>(writes: Promise<T>, count?: (result: T) => Promise<void>): Promise<T> => {
    const done = writes.then(async (result) => {
      await count?.(result);
      return result;
    });
    done.catch(() => undefined); // awaited below, or by no one once the request answered 503
    await withDeadline(writes, mongoDeadlineMs, 'MongoDB writes of the interaction');
    return done;
  };
  const toggle = (path: string, action: (vid: string, userId: string) => Promise<ToggleOutcome>, engagement?: 'like' | 'collect') =>
    router.post(path, async (req, res) => {
      const { userId } = requireUser(req, jwtSecret);
      const { vid } = validateBody(vidBody, req);
      const { active, changed } = await counted(action(vid, userId), async ({ first }) => {
        if (engagement && first) await readout.record(userIdentity(userId), engagement);
      });
      res.json({ active, changed });
    });
  toggle('/api/app/vid/like', service.like, 'like');
  toggle('/api/app/vid/unlike', service.unlike);
  toggle('/api/app/vid/collect', service.collect, 'collect');
  toggle('/api/app/vid/uncollect', service.uncollect);

  router.post('/api/app/vid/comment', async (req, res) => {
    const { userId } = requireUser(req, jwtSecret);
    const { vid, content } = validateBody(commentBody, req);
    const header = req.header('idempotency-key');
    const key = header === undefined ? undefined : validate(idempotencyKey.label('Idempotency-Key'), header);
    const result = await counted(service.comment(vid, userId, content.trim(), key), async ({ created }) => {
      if (created) await readout.record(userIdentity(userId), 'comment');
    });
    res.status(result.created ? 201 : 200).json(result);
  });

  router.delete('/api/app/vid/comment/:id', async (req, res) => {
    const { userId } = requireUser(req, jwtSecret);
    const id = validate(objectId.label('id'), req.params.id);
    res.json(await counted(service.deleteComment(id, userId)));
  });

  router.post('/api/app/share/output', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { videoID } = validateBody(shareBody, req);
    // A guest's share moves no counter (R4) but is engagement of the guest's variant all the same.
    const share = await counted(service.share(videoID, identity.userId), async ({ first, valid }) => {
      if (valid && videoID !== undefined) await readout.recordShare(identity, videoID, first);
    });
    res.json({ ok: true, counted: share.counted });
  });
  return router;
}
