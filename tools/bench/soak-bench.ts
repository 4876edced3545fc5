/**
 * `pnpm bench soak [--minutes M] [--users U] [--videos N] [--connections C] [--budget MB]`: the
 * compiled API (`pnpm build` first) started as the image starts it (`node $(node
 * dist/heap-flag.js) dist/main.js`: V8's old space capped by API_MEMORY_BUDGET_MB), under a soak of
 * many distinct users reading the ring, its memory sampled every 5 s from /proc (RSS) and its own
 * /metrics (V8 heap used, each cache's bytes). Defaults: 3 minutes, 50,000 users, 20,000 videos,
 * the default budget (256 MB, against infra/k8s/api.yaml's 384Mi limit). Last line:
 * `soak: rss_mb_max_after_1min=<x> rss_mb_max=<x> heap_used_mb_max=<y> heap_limit_mb=<l>
 * video_cache_mb=<v> token_cache_mb=<t> queue_copy_mb=<z> req_per_s=<r>`.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import jwt from 'jsonwebtoken';
import { videoModel } from '@feed/storage';
import { seedVideos } from '@feed/demo-data';
import { ROOT, type Managed } from '../support/processes';
import { startTestDeployable } from '../support/deployables';
import { argValue, benchApiEnv, benchStores, buildBenchVersion, loadWithTokens } from './support';

const SECRET = randomBytes(24).toString('hex');
const SAMPLE_EVERY_MS = 5_000;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const gauge = (metrics: string, name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);
const cacheMb = (metrics: string, cache: string) => gauge(metrics, `feed_cache_bytes{cache="${cache}"}`) / 1e6;
/** Samples before this are the warm-up: the caches filling, the first collections. */
const WARM_UP_MS = 60_000;

export async function runSoakBench(): Promise<void> {
  const minutes = Number(argValue('minutes', '3'));
  const users = Number(argValue('users', '50000'));
  const videoCount = Number(argValue('videos', '20000'));
  const connections = Number(argValue('connections', '50'));
  const budget = argValue('budget');
  const entry = path.join(ROOT, 'apps/api/dist/main.js');
  const heapFlagScript = path.join(ROOT, 'apps/api/dist/heap-flag.js');
  if (!existsSync(entry) || !existsSync(heapFlagScript)) execFileSync('pnpm', ['build'], { cwd: ROOT, stdio: 'inherit' });

  const { mongoUri, connection, redis, prefix, keys, close } = await benchStores();
  let api: Managed | undefined;
  try {
    const videos = videoModel(connection);
    await videos.init();
    await seedVideos(videos, { videos: videoCount - Math.round(videoCount / 50), fresh: Math.round(videoCount / 50) });
    await buildBenchVersion(redis, keys, videos);
    const env = benchApiEnv(SECRET, budget === undefined ? {} : { API_MEMORY_BUDGET_MB: budget });
    // What infra/Dockerfile.api's command does: the V8 flag first, from the same setting.
    const heapFlag = execFileSync(process.execPath, [heapFlagScript], { env: { ...process.env, ...env } }).toString();
    console.log(`api: node ${heapFlag} dist/main.js, API_MEMORY_BUDGET_MB=${budget ?? 'default'}`);
    let base: string;
    ({ process: api, base } = await startTestDeployable([...(heapFlag ? [heapFlag] : []), entry], { redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', mongoUrl: mongoUri, prefix }, env));
    const tokens = Array.from({ length: users }, (_, i) => jwt.sign({ sub: `soak-user-${i}` }, SECRET, { algorithm: 'HS256' }));
    const pid = api.child.pid!;
    const samples: Array<{ at: number; rss: number; heap: number; limit: number; video: number; token: number; copies: number }> = [];
    const started = Date.now();
    const sample = async () => {
      const metrics = await (await fetch(`${base}/metrics`)).text();
      samples.push({
        at: Date.now() - started,
        rss: rssMb(pid),
        heap: gauge(metrics, 'nodejs_heap_size_used_bytes') / 1e6,
        limit: gauge(metrics, 'feed_heap_limit_bytes') / 1e6,
        video: cacheMb(metrics, 'video'),
        token: cacheMb(metrics, 'token'),
        copies: cacheMb(metrics, 'queue_copies'),
      });
      const last = samples.at(-1)!;
      console.log(
        `t=${Math.round(last.at / 1000)}s rss ${last.rss.toFixed(0)} MB heap used ${last.heap.toFixed(0)} MB caches: video ${last.video.toFixed(1)} MB, tokens ${last.token.toFixed(1)} MB, queue copies ${last.copies.toFixed(1)} MB`,
      );
    };
    const sampler = setInterval(() => void sample(), SAMPLE_EVERY_MS);
    const result = await loadWithTokens(`${base}/api/app/recommend/vid/list`, tokens, minutes * 60, connections);
    clearInterval(sampler);
    await sample();
    type Key = Exclude<keyof (typeof samples)[number], 'at'>;
    const max = (key: Key, from = samples) => Math.max(...from.map((s) => s[key]));
    const warm = samples.filter((s) => s.at >= WARM_UP_MS);
    const min = (key: Key) => Math.min(...warm.map((s) => s[key]));
    console.log(`${minutes} min, ${users} distinct users, ${videoCount} videos, ${connections} connections: ${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx + result.errors}`);
    console.log(`after the first minute: rss ${min('rss').toFixed(0)}-${max('rss', warm).toFixed(0)} MB, heap used ${min('heap').toFixed(0)}-${max('heap', warm).toFixed(0)} MB (V8 heap limit ${max('limit').toFixed(0)} MB)`);
    console.log(
      `soak: rss_mb_max_after_1min=${max('rss', warm).toFixed(0)} rss_mb_max=${max('rss').toFixed(0)} heap_used_mb_max=${max('heap').toFixed(0)} heap_limit_mb=${max('limit').toFixed(0)} video_cache_mb=${max('video').toFixed(1)} token_cache_mb=${max('token').toFixed(1)} queue_copy_mb=${max('copies').toFixed(2)} req_per_s=${result.requests.average.toFixed(0)}`,
    );
  } finally {
    await api?.stop();
    await close();
  }
}
