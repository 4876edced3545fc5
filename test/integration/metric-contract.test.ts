/**
 * The metric contract (D5, issue 23): what infra/observability/* queries must be what the
 * deployables export. Both run as SRE runs them (start:api, start:worker) over a Redis prefix and
 * a database of this test's own; the worker's first start builds, users read and like, a
 * degradation happens; then both /metrics are scraped and every metric name, and every label an
 * alert matches or groups by, must be there. A rename in code fails here, not silently in alerting.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { seedVideos } from '@feed/demo-data';
import { connectRedis, createRedisKeys, deleteKeysWithPrefix, videoModel, type Redis } from '@feed/storage';
import { ROOT, tsx, waitUntil, type Managed } from '../../tools/support/processes';
import { startTestDeployable } from '../support/deployables';
import { contractFetch } from '../support/contract';
import { bearer, setOffset } from '../support/feed-fixtures';
import { testMongoUrl } from '../support/mongo';

const prefix = `test:metrics:${process.pid}:${randomBytes(3).toString('hex')}:`;
const keys = createRedisKeys(prefix);
const mongoUrl = testMongoUrl('metric_contract');
const running: Managed[] = [];
let redis: Redis;
let mongo: Connection;

beforeAll(async () => {
  redis = await connectRedis({ redisUrl: process.env.TEST_REDIS_URL! });
  mongo = await mongoose.createConnection(mongoUrl).asPromise();
  await seedVideos(videoModel(mongo), { videos: 100, fresh: 5 });
  // One odd document (R1a): the build counts it in feed_build_documents_skipped_total{reason}.
  await mongo.collection('videos').insertOne({ status: 'approved', newsType: 'short', title: 'odd', recommendLikeCount: 'many', reviewAt: new Date(Date.now() - 3 * 86_400_000) });
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await deleteKeysWithPrefix(redis, prefix);
  await redis.close();
  await mongo.dropDatabase();
  await mongo.close();
});

/** Every `feed_*` series an observability file queries, with the labels it matches or groups by. */
function queried(): Map<string, Set<string>> {
  const dir = path.join(ROOT, 'infra/observability');
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(ya?ml|json)$/.test(f) && !f.endsWith('.test.yml'));
  const wanted = new Map<string, Set<string>>();
  for (const file of files) {
    for (const [expression] of readFileSync(path.join(dir, file), 'utf8').matchAll(/[^\n"]*feed_[a-z0-9_]+[^\n"]*/g)) {
      // `sum by (x) (... feed_metric ...)`: x is a label of the first metric after the `by`.
      const groupings = [...expression.matchAll(/\bby\s*\(([^)]*)\)/g)].map((m) => ({ at: m.index, labels: m[1].split(',').map((l) => l.trim()).filter(Boolean) }));
      for (const match of expression.matchAll(/\b(feed_[a-z0-9_]+)(?:\{([^}]*)\})?/g)) {
        const [, name, matchers = ''] = match;
        const labels = wanted.get(name) ?? new Set<string>();
        for (const [, label] of matchers.matchAll(/(\w+)\s*[=!]~?/g)) labels.add(label);
        for (const grouping of groupings) {
          const next = expression.slice(grouping.at).search(/\bfeed_[a-z0-9_]+/) + grouping.at;
          if (next === match.index) grouping.labels.forEach((label) => labels.add(label));
        }
        wanted.set(name, labels);
      }
    }
  }
  return wanted;
}

/** Metric name -> label names seen on its samples, from Prometheus text. */
function exported(text: string): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const help = /^# (?:HELP|TYPE) (\S+)/.exec(line);
    if (help) {
      if (!series.has(help[1])) series.set(help[1], new Set());
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s/.exec(line);
    if (!sample) continue;
    const labels = series.get(sample[1]) ?? new Set<string>();
    for (const [, label] of (sample[2] ?? '').matchAll(/(\w+)="/g)) labels.add(label);
    series.set(sample[1], labels);
  }
  return series;
}

async function startDeployable(name: 'api' | 'worker'): Promise<string> {
  const deployable = await startTestDeployable(tsx('tools/start-one.ts', name), { prefix, mongoUrl }, { CURRENT_CACHE_MS: '0' }, { startupMs: 90_000 });
  running.push(deployable.process);
  return deployable.base;
}

describe('metric contract (D5)', () => {
  it('when both deployables have built, served, counted and degraded, then every metric and label the alerts query is exported', async () => {
    const [worker, api] = await Promise.all([startDeployable('worker'), startDeployable('api')]);
    // The controller's first-start build (no build by hand), then reads and a like.
    await waitUntil('a ring page', async () => /^\d{8}$/.test(((await (await contractFetch(`${api}/api/app/recommend/vid/list`, { headers: bearer('metrics-user') })).json()) as { queueVersion: string }).queueVersion), 60_000);
    const page = (await (await contractFetch(`${api}/api/app/recommend/vid/list`, { headers: bearer('metrics-user') })).json()) as { queueVersion: string; vInfos: Array<{ vid: string }> };
    await contractFetch(`${api}/api/app/vid/like`, { method: 'POST', headers: { ...bearer('metrics-user'), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: page.vInfos[0].vid }) });
    await contractFetch(`${api}/api/app/vid/like`, { method: 'POST', headers: { ...bearer('metrics-user'), 'Content-Type': 'application/json' }, body: '{"vid":"not-an-id"}' });
    // A view, so the next page skips a candidate (feed_skipped_videos_total{reason}).
    await contractFetch(`${api}/api/app/vid/view`, { method: 'POST', headers: { ...bearer('metrics-user'), 'Content-Type': 'application/json' }, body: JSON.stringify({ vid: page.vInfos[0].vid }) });
    await setOffset(redis, keys, page.queueVersion, 'u:metrics-user', 0);
    await contractFetch(`${api}/api/app/recommend/vid/list`, { headers: bearer('metrics-user') });
    // A degradation: the current queue gone (the controller puts it back; this read comes first or not, either counts).
    await redis.del(keys.queue(page.queueVersion));
    await contractFetch(`${api}/api/app/recommend/vid/list`, { headers: bearer('degraded-user') });

    const scraped = new Map<string, Set<string>>();
    for (const base of [api, worker]) {
      for (const [name, labels] of exported(await (await contractFetch(`${base}/metrics`)).text())) scraped.set(name, new Set([...(scraped.get(name) ?? []), ...labels]));
    }
    const wanted = queried();
    expect(wanted.size).toBeGreaterThan(5);
    // Labels show only on samples, and every labelled metric is exported at 0 for each declared
    // value from the start (declareLabels): a counter nothing has moved yet still carries its labels.
    // `instance` and `job` are the scrape target's labels, added by Prometheus, never exported.
    const targetLabel = (label: string) => label === 'instance' || label === 'job';
    const missing = [...wanted].flatMap(([name, labels]) =>
      !scraped.has(name)
        ? [`${name} (not exported)`]
        : [...labels].filter((label) => !targetLabel(label) && !scraped.get(name)!.has(label)).map((label) => `${name}{${label}} (label not exported)`),
    );
    expect(missing).toEqual([]);
    // Both deployables probe their stores at the scrape (bounded: scrape-stall.test.ts), no readiness probe needed first.
    for (const base of [api, worker]) expect((await (await contractFetch(`${base}/metrics`)).text()).match(/^feed_dependency_up\{dependency="(redis|mongo)"\} 1$/gm)).toHaveLength(2);
  }, 120_000);
});
