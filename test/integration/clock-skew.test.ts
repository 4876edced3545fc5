/**
 * An API host whose clock is off Redis's (SPEC R11): the API process runs under libfaketime
 * (Debian package faketime, LD_PRELOAD), its wall clock 3 s or 60 s behind, or 60 s ahead. It
 * serves only ring pages, each starting where the last ended, and exports the skew it measured.
 */
import { existsSync } from 'node:fs';
import { videoModel } from '@feed/storage';
import { demoVideo } from '@feed/demo-data';
import { tsx, waitUntil } from '../../tools/support/processes';
import { contractFetch } from '../support/contract';
import { bearer, publishQueue } from '../support/feed-fixtures';
import { startTestDeployable } from '../support/deployables';
import { useTestServices } from '../support/services';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const VERSION = '20260724';
const PAGE = 5;
const s = useTestServices('clockskew');
let ids: string[];

beforeAll(async () => {
  if (!existsSync(LIBFAKETIME)) throw new Error(`${LIBFAKETIME} is missing: install the Debian package faketime (.ci/run does)`);
  const docs = await videoModel(s.mongo).insertMany(Array.from({ length: 40 }, () => demoVideo({ reviewAt: new Date('2026-07-20T00:00:00Z') })));
  ids = docs.map((d) => d._id.toHexString());
});

beforeEach(async () => {
  await publishQueue(s.redis, s.keys, VERSION, ids);
  await s.redis.sAdd(s.keys.legacyIds, ids);
});

describe.each([
  ['-3s', 3],
  ['-60s', 60],
  ['+60s', -60],
])('an API process whose clock is FAKETIME=%s off Redis', (faketime, expectedSkew) => {
  it(`when users read three pages each, then every page is a ring page starting where the last ended, and the skew is measured as ${expectedSkew} s`, async () => {
    const api = await startTestDeployable(tsx('apps/api/src/main.ts'), { prefix: s.prefix, mongoUrl: s.config.mongoUrl! }, {
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME: faketime,
      // Only the wall clock is off, as on a drifted host; the monotonic clock keeps counting.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
      REDIS_DEADLINE_MS: '1000',
      LOG_LEVEL: 'warn',
    });
    s.disposeAfter(() => api.process.stop('SIGKILL'));
    const page = async (user: string) => {
      const res = await contractFetch(`${api.base}/api/app/recommend/vid/list?pageSize=${PAGE}`, { headers: bearer(user) });
      const body = (await res.json()) as { queueVersion: string; vInfos: Array<{ vid: string }> };
      return { status: res.status, version: body.queueVersion, vids: body.vInfos.map((v) => v.vid) };
    };
    // The first page may find `current` not yet read (a cold start): that warm-up is not the subject.
    await waitUntil('the API to serve the ring', async () => (await page('warm-up')).version === VERSION, 20_000);
    for (const user of ['skew-a', 'skew-b', 'skew-c']) {
      const pages = [await page(user), await page(user), await page(user)];
      expect({ user, pages }).toEqual({ user, pages: [0, 1, 2].map((n) => ({ status: 200, version: VERSION, vids: ids.slice(n * PAGE, (n + 1) * PAGE) })) });
    }
    const metrics = await (await contractFetch(`${api.base}/metrics`)).text();
    const skew = Number(/^feed_clock_skew_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(Math.abs(skew - expectedSkew)).toBeLessThan(1);
    expect(metrics).not.toMatch(/^feed_redis_failures_total\{operation="ring"\} [1-9]/m);
  }, 90_000);
});
