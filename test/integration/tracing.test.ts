/**
 * OpenTelemetry traces (D5, issue 23): both deployables, run as production runs them (their
 * main.ts), with the standard OTEL_* variables pointing at an OTLP/HTTP receiver in this test
 * (JSON encoding, OTEL_EXPORTER_OTLP_PROTOCOL=http/json). The worker's first start builds: its
 * phases are spans under the BullMQ job's span. A feed read is one trace: the HTTP span (with the
 * request id and the strategy that served), the ring claim and the MongoDB lookup below it.
 */
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { seedVideos } from '@feed/demo-data';
import { connectRedis, deleteKeysWithPrefix, videoModel, type Redis } from '@feed/storage';
import { tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { contractFetch } from '../support/contract';
import { startTestDeployable } from '../support/deployables';
import { bearer } from '../support/feed-fixtures';
import { testMongoUrl } from '../support/mongo';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: OtlpValue }>;
}
interface Exported extends OtlpSpan {
  service: string;
}

const prefix = `test:tracing:${process.pid}:${randomBytes(3).toString('hex')}:`;
const mongoUrl = testMongoUrl('tracing');
const running: Managed[] = [];
const spans: Exported[] = [];
let receiver: Server;
let receiverUrl: string;
let redis: Redis;
let mongo: Connection;

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue ?? value?.boolValue;
};

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: OtlpValue }> }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
        };
        for (const { resource, scopeSpans } of body.resourceSpans) {
          const service = String(resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue);
          for (const scope of scopeSpans) for (const span of scope.spans) spans.push({ ...span, service });
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  redis = await connectRedis({ redisUrl: process.env.TEST_REDIS_URL! });
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: 60, fresh: 3 });
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await new Promise((resolve) => receiver.close(resolve));
  await deleteKeysWithPrefix(redis, prefix);
  await redis.close();
  await mongo.dropDatabase();
  await mongo.close();
});

async function startDeployable(name: 'api' | 'worker'): Promise<string> {
  const deployable = await startTestDeployable(tsx(`apps/${name}/src/main.ts`), { prefix, mongoUrl }, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    // Every read goes to MongoDB (the warm-up page would otherwise leave the videos cached).
    VIDEO_CACHE_MS: '0',
    // Export every few hundred ms, not every 5 s (the batch processor's default).
    OTEL_BSP_SCHEDULE_DELAY: '200',
  });
  running.push(deployable.process);
  return deployable.base;
}

/** The span's ancestors in its trace, nearest first. */
function ancestors(span: OtlpSpan): Exported[] {
  const chain: Exported[] = [];
  for (let parent = span.parentSpanId; parent; ) {
    const found = spans.find((s) => s.traceId === span.traceId && s.spanId === parent);
    if (!found) break;
    chain.push(found);
    parent = found.parentSpanId;
  }
  return chain;
}

describe('OpenTelemetry traces (D5)', () => {
  it("when both deployables run with OTEL_* set, then the build's phases are children of its BullMQ job and a feed read is one trace: HTTP, ring claim, MongoDB lookup", async () => {
    await startDeployable('worker');
    // The controller's first-start build, processed by the BullMQ worker.
    // The job's span ends (and is exported) after its phases: wait for the phases and their job.
    const jobOf = (span: OtlpSpan) => ancestors(span).find((s) => /short-recommend-build/.test(s.name));
    await waitUntil('the build phases and their job exported', async () => spans.some((s) => s.name === 'build read' && jobOf(s) !== undefined), 60_000);
    const phase = spans.find((s) => s.name === 'build read')!;
    expect(phase.service).toBe('feed-worker');
    expect(jobOf(phase)!.service).toBe('feed-worker');
    for (const name of ['build lock', 'build assemble', 'build write', 'build switch']) {
      const other = spans.find((s) => s.name === name)!;
      expect({ name, parent: other.parentSpanId }).toEqual({ name, parent: phase.parentSpanId });
    }

    const api = await startDeployable('api');
    await waitUntil('a ring page', async () => /^\d{8}$/.test(((await (await contractFetch(`${api}/api/app/recommend/vid/list`, { headers: bearer('warm-up') })).json()) as { queueVersion: string }).queueVersion), 30_000);
    const res = await contractFetch(`${api}/api/app/recommend/vid/list`, { headers: { ...bearer('traced-user'), 'X-Request-Id': 'trace-me-1' } });
    expect(res.status).toBe(200);

    await waitUntil('the feed read exported', async () => spans.some((s) => attribute(s, 'http.request_id') === 'trace-me-1'), 15_000);
    const http = spans.find((s) => attribute(s, 'http.request_id') === 'trace-me-1')!;
    expect(http).toMatchObject({ service: 'feed-api' });
    expect(http.parentSpanId ?? '').toBe('');
    expect(attribute(http, 'feed.strategy')).toBe('ring');
    await waitUntil('the trace complete', async () => {
      const trace = spans.filter((s) => s.traceId === http.traceId);
      return trace.some((s) => s.name === 'ring claim') && trace.some((s) => attribute(s, 'db.system') === 'mongodb' || attribute(s, 'db.system.name') === 'mongodb');
    }, 15_000).catch((err: unknown) => {
      throw new Error(`${String(err)}; the trace: ${JSON.stringify(spans.filter((s) => s.traceId === http.traceId).map((s) => [s.name, s.attributes?.map((a) => a.key)]))}`);
    });
    const trace = spans.filter((s) => s.traceId === http.traceId);
    const claim = trace.find((s) => s.name === 'ring claim')!;
    const mongoCall = trace.find((s) => attribute(s, 'db.system') === 'mongodb' || attribute(s, 'db.system.name') === 'mongodb')!;
    // Both below the HTTP span, in this one trace; the claim's Redis command below the claim.
    expect(ancestors(claim).map((s) => s.spanId)).toContain(http.spanId);
    expect(ancestors(mongoCall).map((s) => s.spanId)).toContain(http.spanId);
    expect(ancestors(mongoCall)[0].name).toBe('video lookup');
    expect(trace.some((s) => s.parentSpanId === claim.spanId && /EVALSHA|evalsha/i.test(s.name))).toBe(true);
  }, 120_000);
});
