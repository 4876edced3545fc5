/**
 * What traces must not carry, and what they must not cost (D5, D4): both deployables with the
 * OTEL_* variables set. A request's query string is recorded with its keys only (a token sent in
 * a URL is in no exported span, whatever the attribute); and with a collector that refuses
 * connections, or one that accepts and never answers, SIGTERM still exits 0 well within 10 s.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { seedVideos } from '@feed/demo-data';
import { connectRedis, deleteKeysWithPrefix, videoModel, type Redis } from '@feed/storage';
import { freePort, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { contractFetch } from '../support/contract';
import { startTestDeployable } from '../support/deployables';
import { bearer } from '../support/feed-fixtures';
import { testMongoUrl } from '../support/mongo';

const SECRET = `QUERYSECRET${randomBytes(4).toString('hex')}`;
const prefix = `test:trace-hygiene:${process.pid}:${randomBytes(3).toString('hex')}:`;
const mongoUrl = testMongoUrl('trace_hygiene');
const ADMIN = { Authorization: `Basic ${Buffer.from('admin:feed-insecure-local-admin-password').toString('base64')}` };
const running: Managed[] = [];
/** Every OTLP/JSON body the receiver got, verbatim. */
const exports: string[] = [];
let receiver: Server;
let receiverUrl: string;
let blackhole: TcpServer;
const held: Socket[] = [];
let redis: Redis;
let mongo: Connection;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') exports.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  // Accepts every connection and never answers: a collector behind a black-holing network.
  blackhole = createTcpServer((socket) => held.push(socket));
  await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
  redis = await connectRedis({ redisUrl: process.env.TEST_REDIS_URL! });
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: 60, fresh: 3 });
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  held.forEach((socket) => socket.destroy());
  await new Promise((resolve) => blackhole.close(resolve));
  await new Promise((resolve) => receiver.close(resolve));
  await deleteKeysWithPrefix(redis, prefix);
  await redis.close();
  await mongo.dropDatabase();
  await mongo.close();
});

async function startDeployable(name: 'api' | 'worker', env: Record<string, string>): Promise<{ base: string; process: Managed }> {
  // The SDK's modules make the start slower: a longer bound than the default on a shared machine.
  const deployable = await startTestDeployable(tsx(`apps/${name}/src/main.ts`), { prefix, mongoUrl }, { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', ...env }, { startupMs: 90_000 });
  running.push(deployable.process);
  return deployable;
}

/** Server spans of the exports that recorded a query (`url.query`), as [path, query]. */
function recordedQueries(): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  for (const body of exports) {
    const parsed = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ attributes?: Array<{ key: string; value: { stringValue?: string } }> }> }> }> };
    for (const { scopeSpans } of parsed.resourceSpans) {
      for (const { spans } of scopeSpans) {
        for (const { attributes = [] } of spans) {
          const value = (key: string) => attributes.find((a) => a.key === key)?.value.stringValue;
          const query = value('url.query');
          if (query !== undefined) found.push([value('url.path') ?? '', query]);
        }
      }
    }
  }
  return found;
}

describe('trace hygiene (D5, D4)', () => {
  it('when clients send a token in the query string to both deployables, then no exported span carries it and url.query keeps only the keys', async () => {
    const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '200' };
    const [api, worker] = await Promise.all([startDeployable('api', traced), startDeployable('worker', traced)]);
    const query = `token=${SECRET}&page=2&token=${SECRET}x`;
    const requests = [
      contractFetch(`${api.base}/api/app/recommend/vid/list?${query}`, { headers: bearer('hygiene-user') }),
      contractFetch(`${api.base}/api/app/vid/view?${query}`, { method: 'POST', headers: { ...bearer('hygiene-user'), 'Content-Type': 'application/json' }, body: '{"vid":"not-an-id"}' }),
      contractFetch(`${api.base}/no/such/route?${query}`),
      contractFetch(`${worker.base}/admin/inspector/api/summary?${query}`, { headers: ADMIN }),
      contractFetch(`${worker.base}/admin/queues/api/queues?${query}`, { headers: ADMIN }),
    ];
    await Promise.all((await Promise.all(requests)).map((res) => res.arrayBuffer()));
    await waitUntil('the five requests exported', async () => recordedQueries().length >= requests.length, 20_000);
    expect(new Set(recordedQueries().map(([, recorded]) => recorded))).toEqual(new Set(['token=REDACTED&page=REDACTED']));
    expect(exports.filter((body) => body.includes(SECRET))).toEqual([]);
  }, 150_000);

  it('when the collector refuses connections or never answers, then SIGTERM with spans still queued exits 0 within 10 s', async () => {
    const collectors = { refused: `http://127.0.0.1:${await freePort()}`, blackholed: `http://127.0.0.1:${(blackhole.address() as { port: number }).port}` };
    const measured = [];
    for (const [collector, endpoint] of Object.entries(collectors)) {
      measured.push(
        ...(await Promise.all(
          (['api', 'worker'] as const).map(async (name) => {
            // The batch would export only after a minute: the spans are still queued when the signal comes.
            const deployable = await startDeployable(name, { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '60000' });
            await (await fetch(`${deployable.base}/no/such/route`)).arrayBuffer();
            const signalledAt = Date.now();
            await deployable.process.stop('SIGTERM');
            return { collector, name, ms: Date.now() - signalledAt, code: deployable.process.child.exitCode };
          }),
        )),
      );
    }
    console.log(`SIGTERM to exit with an unreachable collector: ${measured.map(({ collector, name, ms }) => `${name}/${collector} ${ms} ms`).join(', ')}`);
    for (const { collector, name, ms, code } of measured) expect({ collector, name, code, withinBudget: ms < 10_000 }).toEqual({ collector, name, code: 0, withinBudget: true });
  }, 300_000);
});
