/**
 * The kill switch while the audit trail cannot be written (R16, D6): MongoDB down must not make
 * on-call believe a change failed that is in force. The change answers what is in force, and the
 * entry the trail could not take is logged at error level with who and the values.
 */
import mongoose from 'mongoose';
import request from '../../../test/support/contract';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { logger } from '@feed/logger';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';

const s = useTestServices('rollout_mongo_down');

afterEach(() => jest.restoreAllMocks());

it('when MongoDB is down and on-call flips the kill switch, then the answer is the change in force, and the missing entry is logged at error level', async () => {
  // A MongoDB of this test's own, stopped after the app connected.
  const mongo = await startEmbeddedMongo();
  const connection = await mongoose.createConnection(`${mongo.uri}/down`, { serverSelectionTimeoutMS: 300 }).asPromise();
  const errors = jest.spyOn(logger, 'error');
  try {
    const app = testApi(s, {}, { mongo: connection }).app;
    await mongo.stop();
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    const res = await request(app).put('/api/admin/rollout').set(admin).send({ enabled: false });
    expect(await s.redis.hGetAll(s.keys.rollout)).toMatchObject({ enabled: 'false' });
    expect({ status: res.status, enabled: res.body.enabled }).toEqual({ status: 200, enabled: false });
    expect(errors).toHaveBeenCalledWith('audit trail unwritable', expect.objectContaining({ action: 'rollout-set', actor: s.config.adminUser, via: 'api', after: expect.objectContaining({ enabled: false }) }));
  } finally {
    await connection.close(true);
    await mongo.stop();
  }
}, 60_000);

it('when MongoDB is frozen and on-call flips the kill switch, then the change answers within the MongoDB budget, in force, and the entry not written in time is logged at error level', async () => {
  // A MongoDB of this test's own whose writes of the audit trail block far past the budget (a frozen server).
  const mongo = await startEmbeddedMongo();
  const connection = await mongoose.createConnection(`${mongo.uri}/frozen`).asPromise();
  const errors = jest.spyOn(logger, 'error');
  try {
    const app = testApi(s, { mongoDeadlineMs: 500 }, { mongo: connection }).app;
    await connection.db!.admin().command({ configureFailPoint: 'failCommand', mode: 'alwaysOn', data: { failCommands: ['insert', 'create', 'createIndexes'], blockConnection: true, blockTimeMS: 3_000 } });
    const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
    // The bound only ends a test that would otherwise wait for the block: an answer past it fails.
    const res = await request(app).put('/api/admin/rollout').set(admin).send({ enabled: false }).timeout(2_000);
    expect({ status: res.status, enabled: res.body.enabled }).toEqual({ status: 200, enabled: false });
    expect(await s.redis.hGetAll(s.keys.rollout)).toMatchObject({ enabled: 'false' });
    expect(errors).toHaveBeenCalledWith('audit trail unwritable', expect.objectContaining({ action: 'rollout-set', actor: s.config.adminUser, via: 'api' }));
  } finally {
    await connection.db!.admin().command({ configureFailPoint: 'failCommand', mode: 'off' });
    await connection.close(true);
    await mongo.stop();
  }
}, 60_000);
