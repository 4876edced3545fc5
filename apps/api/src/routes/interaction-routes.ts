/** Interactions of a signed-in user (SPEC R3, R4); shares also accept guests (counted for users only). */
import { Router } from 'express';
import Joi from 'joi';
import { ROUTING } from '@feed/http';
import { budgetOf } from '../http/request-budget';
import { identify, requireUser } from '../http/identity';
import type { VariantReadout } from '../feed/variant-readout';
import { objectId, validate, validateBody, vidBody } from '../http/validate';
import type { InteractionService, ToggleOutcome } from '../interactions/interaction-service';
import type { RequestBudget } from '@feed/storage';

export const MAX_COMMENT_LENGTH = 500;

// Checked as sent, then trimmed (the route): the limits the document states are the ones the server applies.
export const commentBody = Joi.object<{ vid: string; content: string }>({
  vid: objectId.required(),
  content: Joi.string().min(1).max(MAX_COMMENT_LENGTH).pattern(/\S/, 'not blank').required().description(`1-${MAX_COMMENT_LENGTH} characters as sent, not only whitespace; stored trimmed`),
});
export const shareBody = Joi.object<{ videoID?: string }>({ videoID: objectId.description('Without it nothing is counted (old clients)') }).unknown(true);
export const idempotencyKey = Joi.string().pattern(/^[A-Za-z0-9_.:-]{8,128}$/, 'Idempotency-Key (8-128 characters of A-Z, a-z, 0-9, _ . : -)');

/** Routes parse, call the service with the request's budget, answer; `readout` counts shares, guests' too (D7). */
export function interactionRoutes({ interactions, jwtSecret, readout }: { interactions: InteractionService; jwtSecret: string; readout: Pick<VariantReadout, 'recordShare'> }): Router {
  const router = Router(ROUTING);
  type Toggle = (vid: string, userId: string, budget: RequestBudget) => Promise<ToggleOutcome>;
  const toggle = (path: string, action: Toggle) =>
    router.post(path, async (req, res) => {
      const { userId } = requireUser(req, jwtSecret);
      const { vid } = validateBody(vidBody, req);
      const { active, changed } = await action(vid, userId, budgetOf(res));
      res.json({ active, changed });
    });
  toggle('/api/app/vid/like', interactions.like);
  toggle('/api/app/vid/unlike', interactions.unlike);
  toggle('/api/app/vid/collect', interactions.collect);
  toggle('/api/app/vid/uncollect', interactions.uncollect);

  router.post('/api/app/vid/comment', async (req, res) => {
    const { userId } = requireUser(req, jwtSecret);
    const { vid, content } = validateBody(commentBody, req);
    const header = req.header('idempotency-key');
    const key = header === undefined ? undefined : validate(idempotencyKey.label('Idempotency-Key'), header);
    const result = await interactions.comment(vid, userId, content.trim(), budgetOf(res), key);
    res.status(result.created ? 201 : 200).json(result);
  });

  router.delete('/api/app/vid/comment/:id', async (req, res) => {
    const { userId } = requireUser(req, jwtSecret);
    const id = validate(objectId.label('id'), req.params.id);
    res.json(await interactions.deleteComment(id, userId, budgetOf(res)));
  });

  router.post('/api/app/share/output', async (req, res) => {
    const identity = identify(req, jwtSecret);
    const { videoID } = validateBody(shareBody, req);
    const budget = budgetOf(res);
    const share = await interactions.share(videoID, identity.userId, budget);
    // A guest's share moves no counter (R4) but is engagement of the guest's variant all the same.
    if (share.valid && videoID !== undefined) await readout.recordShare(identity, videoID, share.first, budget.redis);
    res.json({ ok: true, counted: share.counted });
  });
  return router;
}
