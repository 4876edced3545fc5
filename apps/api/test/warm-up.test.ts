/**
 * The start's warm-up (warm-up.ts, issue 49): likes and unlikes of videos that do not exist, sent
 * through the server before it listens where it serves. They write nothing, are not counted in
 * /metrics, and leave the server ready to listen again, where answers are counted.
 */
import { createServer, type RequestListener } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import mongoose, { Types } from 'mongoose';
import { demoVideo } from '@feed/demo-data';
import { startEmbeddedMongo } from '@feed/embedded-mongo';
import { interactionModels, videoModel } from '@feed/storage';
import { logger } from '@feed/logger';
import { warmUp } from '../src/warm-up';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';

const s = useTestServices('warm-up');

/** The like and unlike answers /metrics counted, by status. */
async function counted(metrics: string): Promise<Record<string, number>> {
  const answers: Record<string, number> = {};
  for (const [, route, status, n] of metrics.matchAll(/^feed_http_request_duration_seconds_count\{method="POST",route="\/api\/app\/vid\/(like|unlike)",status="(\d+)"\} (\d+)$/gm)) {
    if (Number(n) > 0) answers[`${route} ${status}`] = Number(n);
  }
  return answers;
}

it('when the API warms up, then every request is a 404 that writes nothing and /metrics counts none; then the server listens again and counts its answers', async () => {
  const api = testApi(s);
  const records = interactionModels(s.mongo);
  const server = createServer(api.app);

  const answers = await api.warmUp(server, 40);

  expect(Object.fromEntries(answers)).toEqual({ 404: 40 });
  expect(await records.likes.countDocuments({ userId: 'warm-up' })).toBe(0);
  expect(await counted(await api.metrics.registry.metrics())).toEqual({});
  expect(server.listening).toBe(false);

  await once(server.listen(0, '127.0.0.1'), 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/api/app/vid/like`, { method: 'POST', headers: { ...bearer('after-warm-up'), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: 'ffffffffffffffff00000000' }) });
    expect(res.status).toBe(404);
    expect(await counted(await api.metrics.registry.metrics())).toEqual({ 'like 404': 1 });
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

it('when asked for no requests, then the warm-up does not listen at all', async () => {
  const api = testApi(s);
  const server = createServer(api.app);
  const listened = jest.fn();
  server.on('listening', listened);

  expect((await api.warmUp(server, 0)).size).toBe(0);
  expect(listened).not.toHaveBeenCalled();
});

/** Elapsed ms of a warm-up of `requests` through a server whose handler is `handle`. */
async function timedWarmUp(handle: RequestListener, requests = 1000) {
  const server = createServer(handle);
  const started = performance.now();
  const answers = await warmUp(server, requests, 'warm-up-test-secret-0123456789abcdef');
  return { ms: performance.now() - started, answers: Object.fromEntries(answers), listening: server.listening };
}

it('when each answer takes 3 s (a slow MongoDB), then the warm-up still ends within its 5 s, not after a second round', async () => {
  const timers = new Set<NodeJS.Timeout>();
  const { ms, listening } = await timedWarmUp((req, res) => {
    req.resume();
    timers.add(setTimeout(() => res.writeHead(404).end('{}'), 3_000));
  });
  timers.forEach(clearTimeout);
  expect(listening).toBe(false);
  expect(ms).toBeLessThan(5_600);
}, 15_000);

it('when an answer stalls after its headers, then the warm-up ends within its 5 s (the start does not hang) and counts it as no answer', async () => {
  const { ms, answers, listening } = await timedWarmUp((req, res) => {
    req.resume();
    res.writeHead(404, { 'Content-Length': '100' });
    res.write('{');
  }, 10);
  expect(answers).toEqual({ 0: 10 });
  expect(listening).toBe(false);
  expect(ms).toBeLessThan(5_600);
}, 15_000);

it('when the API warms up, then its 404s write no log line, and the video cache holds and counts none of its ids', async () => {
  const api = testApi(s);
  const server = createServer(api.app);
  const info = jest.spyOn(logger, 'info');
  try {
    expect(Object.fromEntries(await api.warmUp(server, 40))).toEqual({ 404: 40 });
    expect(info.mock.calls.filter(([message]) => (message as unknown) === 'request rejected')).toEqual([]);
  } finally {
    info.mockRestore();
  }
  const metrics = await api.metrics.registry.metrics();
  expect(metrics).toMatch(/^feed_video_cache_requests_total\{result="miss"\} 0$/m);
  expect(metrics).toMatch(/^feed_cache_bytes\{cache="video"\} 0$/m);
});

it('when MongoDB is slow and the warm-up cuts its last requests at 5 s, then their late answers are still neither logged nor counted', async () => {
  // A MongoDB of this test's own whose video look-ups take 3 s: the second round is cut at 5 s and answered at 6 s.
  const mongo = await startEmbeddedMongo();
  const connection = await mongoose.createConnection(`${mongo.uri}/slow`).asPromise();
  const info = jest.spyOn(logger, 'info');
  try {
    const api = testApi(s, { mongoDeadlineMs: 8_000 }, { mongo: connection });
    await connection.db!.admin().command({ configureFailPoint: 'failCommand', mode: 'alwaysOn', data: { failCommands: ['find'], blockConnection: true, blockTimeMS: 3_000 } });
    const answers = await api.warmUp(createServer(api.app), 1000);
    expect(answers.get(0)).toBeGreaterThan(0);
    // The cut requests' look-ups answer at about 6 s.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(info.mock.calls.filter(([message]) => (message as unknown) === 'request rejected')).toEqual([]);
    expect(await counted(await api.metrics.registry.metrics())).toEqual({});
  } finally {
    info.mockRestore();
    await connection.db!.admin().command({ configureFailPoint: 'failCommand', mode: 'off' });
    await connection.close(true);
    await mongo.stop();
  }
}, 30_000);

it('when a video has an id the warm-up once used (ffff...00000000), then the warm-up still writes nothing (no like of the "warm-up" user)', async () => {
  const api = testApi(s);
  await videoModel(s.mongo).insertMany([demoVideo({ _id: new Types.ObjectId('ffffffffffffffff00000000') })]);
  try {
    await api.warmUp(createServer(api.app), 4);
    await api.tallies.idle();
    expect(await interactionModels(s.mongo).likes.countDocuments({ userId: 'warm-up' })).toBe(0);
  } finally {
    await videoModel(s.mongo).deleteOne({ _id: new Types.ObjectId('ffffffffffffffff00000000') });
    await interactionModels(s.mongo).likes.deleteMany({ userId: 'warm-up' });
  }
});
