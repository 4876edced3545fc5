/**
 * The embedded MongoDB server stays a test double of what the product sends (issue 22): the
 * product's MongoDB work (seed, daily build, every API endpoint, the counter repair, the history
 * initialisation) runs over a connection that records each command the driver sends. Every one
 * must be a command the embedded server handles and be named in its README: a product change
 * that starts sending another command fails here before it fails on a developer's machine.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import mongoose, { type Connection } from 'mongoose';
import request from '../support/contract';
import { seedVideos } from '@feed/demo-data';
import { HANDLED_COMMANDS } from '@feed/embedded-mongo';
import { initRecommendHistory, interactionModels, repairPendingCounters, videoModel } from '@feed/storage';
import { runDailyBuild } from '@feed/worker';
import { bearer } from '../support/feed-fixtures';
import { testMongoUrl } from '../support/mongo';
import { useTestServices } from '../support/services';
import { testBuildDeps } from '../support/build-deps';
import { testApi, untilReady } from '../support/api';

const s = useTestServices('mongo_commands');
let conn: Connection;
const sent = new Set<string>();

beforeAll(async () => {
  conn = await mongoose.createConnection(testMongoUrl('mongo_commands'), { monitorCommands: true }).asPromise();
  conn.getClient().on('commandStarted', (event) => sent.add(event.commandName));
});

afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

/** The names listed under "Commands the product sends" in the embedded server's README. */
function namedInReadme(): string[] {
  const readme = readFileSync(path.resolve(__dirname, '../../packages/embedded-mongo/README.md'), 'utf8');
  const section = readme.split(/^## /m).find((part) => part.startsWith('Commands the product sends'));
  if (!section) throw new Error('packages/embedded-mongo/README.md has no "Commands the product sends" section');
  return [...section.matchAll(/`([A-Za-z]+)`/g)].map((match) => match[1]);
}

describe('the commands the product sends to MongoDB', () => {
  it('when the product seeds, builds, serves every endpoint and repairs counters, then each command it sends is handled and named in the README', async () => {
    const videos = videoModel(conn);
    // More than one read batch (2,000): the build reads with getMore.
    await seedVideos(videos, { videos: 2_100, fresh: 5 });
    const build = await runDailyBuild(testBuildDeps(s, videos));
    expect(build.status).toBe('built');

    const { app } = testApi(s, {}, { mongo: conn });
    const user = bearer('commands-user');
    const page = await request(app).get('/api/app/recommend/vid/list').set(user).expect(200);
    const vid = page.body.vInfos[0].vid as string;
    await request(app).post('/api/app/vid/like').set(user).send({ vid }).expect(200);
    await request(app).post('/api/app/vid/unlike').set(user).send({ vid }).expect(200);
    await request(app).post('/api/app/vid/collect').set(user).send({ vid }).expect(200);
    await request(app).post('/api/app/vid/uncollect').set(user).send({ vid }).expect(200);
    const comment = await request(app).post('/api/app/vid/comment').set(user).set('Idempotency-Key', 'commands-comment-1').send({ vid, content: 'hi' }).expect(201);
    await request(app).delete(`/api/app/vid/comment/${comment.body.commentId}`).set(user).expect(200);
    await request(app).post('/api/app/share/output').set(user).send({ videoID: vid }).expect(200);
    await request(app).post('/api/app/vid/view').set(user).send({ vid }).expect(200);
    await request(app).get('/api/app/vid/user/count').query({ vid }).set(user).expect(200);
    await request(app).get('/api/app/recommend/vid/ad').set(user).expect(200);
    await untilReady(app);
    await repairPendingCounters(videos, interactionModels(conn), { minAgeMs: 0 });
    await initRecommendHistory(conn, videos);

    const handled = new Set(HANDLED_COMMANDS);
    const named = new Set(namedInReadme());
    const observed = [...sent].sort();
    expect(observed.filter((name) => !handled.has(name))).toEqual([]);
    expect(observed.filter((name) => !named.has(name))).toEqual([]);
    // And the README names only commands the server handles.
    expect([...named].filter((name) => !handled.has(name))).toEqual([]);
  });
});
