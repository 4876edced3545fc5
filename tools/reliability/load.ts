/** Group `load`: users swiping through the ring for a while: no 5xx, no duplicate in a page, pages in ring order. */
import { percentile } from '../support/percentile';
import { expect, type Suite } from './suite';

export async function loadChecks(suite: Suite): Promise<void> {
  const { api, check, current, queue, summary, token } = suite;
  const LOAD_SECONDS = suite.options.quick ? 8 : 60;
  const LOAD_USERS = suite.options.quick ? 60 : 300;
  await check('load', `${LOAD_USERS} users swiping for ${LOAD_SECONDS} s`, async () => {
    const latencies: number[] = [];
    let requests = 0;
    let serverErrors = 0;
    let duplicates = 0;
    let misordered = 0;
    let degraded = 0;
    const stopAt = Date.now() + LOAD_SECONDS * 1000;
    await Promise.all(
      Array.from({ length: LOAD_USERS }, async (_, u) => {
        const auth = { Authorization: `Bearer ${token(`load-user-${u}`)}` };
        let position = 0;
        while (Date.now() < stopAt) {
          const started = performance.now();
          const res = await fetch(`${api}/api/app/recommend/vid/list?pageSize=20`, { headers: auth });
          latencies.push(performance.now() - started);
          requests++;
          if (res.status >= 500) {
            serverErrors++;
            continue;
          }
          const body = (await res.json()) as { queueVersion: string; vInfos: Array<{ vid: string }> };
          const ids = body.vInfos.map((v) => v.vid);
          if (new Set(ids).size !== ids.length) duplicates++;
          // A degraded page consumes no position of the ring (R11): the next ring page goes on from here.
          if (body.queueVersion !== current) {
            degraded++;
            continue;
          }
          // Successive pages of one user tile the ring in order, wrapping at the tail.
          ids.forEach((id, i) => {
            if (id !== queue[(position + i) % queue.length]) misordered++;
          });
          position += ids.length;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const rps = requests / LOAD_SECONDS;
    summary.load = `${requests} requests (${degraded} degraded), ${rps.toFixed(0)} req/s, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`;
    expect(serverErrors === 0, `${serverErrors} responses were 5xx`);
    expect(duplicates === 0, `${duplicates} responses held a duplicate`);
    expect(misordered === 0, `${misordered} ids were out of ring order (${degraded} pages not served by the ring)`);
    return summary.load;
  });
}
