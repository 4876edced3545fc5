/**
 * An interaction whose record write outlives MONGO_DEADLINE_MS is answered 503; when the record
 * lands afterwards, the tally it starts is stopped at once (interaction-routes.ts), so a frozen
 * MongoDB's backlog of late writes does not run 50 compare-and-set rounds each on a busy video.
 * The service is a stub: what is tested is the route's handling of the written action.
 */
import express from 'express';
import request from 'supertest';
import { errorHandler } from '@feed/http';
import type { InteractionModels, VideoModel } from '@feed/storage';
import { InteractionService, type ToggleOutcome, type Written } from '../src/interactions/interaction-service';
import { interactionRoutes } from '../src/routes/interaction-routes';
import { bearer, TEST_JWT_SECRET } from '../../../test/support/feed-fixtures';

const VID = '5f0c1d2e3a4b5c6d7e8f9a0b';

function appWith(like: () => Promise<Written<ToggleOutcome>>, deferred: string[]) {
  const service = new InteractionService({} as VideoModel, {} as InteractionModels);
  service.like = like;
  const readout = { record: async () => undefined, recordShare: async () => undefined };
  const app = express();
  app.use(express.json());
  app.use(interactionRoutes(service, TEST_JWT_SECRET, readout, 50, (kind) => deferred.push(kind)));
  app.use(errorHandler());
  return app;
}

describe('a record written after its request was answered 503 (R3, R17)', () => {
  it('when the like record lands after the deadline, then the answer is 503 and the tally its record started is stopped', async () => {
    let land = (_written: Written<ToggleOutcome>) => undefined as void;
    const action = new Promise<Written<ToggleOutcome>>((resolve) => (land = resolve));
    const stop = jest.fn();
    const deferred: string[] = [];
    const app = appWith(() => action, deferred);

    const res = await request(app).post('/api/app/vid/like').set(bearer('late-1')).send({ vid: VID });
    expect(res.status).toBe(503);
    expect(stop).not.toHaveBeenCalled();

    // The route's handler on the action was attached before this await, so it has run once this resumes.
    land({ outcome: { active: true, changed: true, first: true }, tally: new Promise<boolean>(() => undefined), stop });
    await action;
    expect(stop).toHaveBeenCalledTimes(1);
    // Not a deferral: the request did not answer 2xx for it.
    expect(deferred).toEqual([]);
  });

  it('when the record lands within the deadline and its tally too, then the answer is 200 and nothing is stopped', async () => {
    const stop = jest.fn();
    const deferred: string[] = [];
    const app = appWith(async () => ({ outcome: { active: true, changed: true, first: true }, tally: Promise.resolve(true), stop }), deferred);
    await request(app).post('/api/app/vid/like').set(bearer('quick-1')).send({ vid: VID }).expect(200, { active: true, changed: true });
    expect(stop).not.toHaveBeenCalled();
    expect(deferred).toEqual([]);
  });
});
