/**
 * The build gauges read current's meta at scrape time (apps/worker/src/metrics.ts): prom-client
 * collects every metric of a scrape at once, so each must wait for that one read, or a scrape
 * shows the previous scrape's figures (a fresh worker's first scrape: 0 candidates).
 */
import type { QueueMeta } from '@feed/storage';
import { createWorkerMetrics } from '../src/metrics';

const meta = (candidateCount: number): QueueMeta => ({
  version: '20260724', length: 20, generatedAt: '2026-07-24T00:00:00.000Z', startOffset: 0, candidateCount, highCount: 17, newCount: 3, finalCount: 20,
  duplicateCount: 0, documentIssues: {}, blocks: [], builtAt: '2026-07-24T00:01:00.000Z', buildId: 'b', offsetBuckets: 4, shadow: false,
});

const gaugeValue = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

describe('build gauges (D5)', () => {
  it('when current is read at a scrape, then that same scrape shows its figures, and one read serves every gauge', async () => {
    let candidates = 120;
    const currentMeta = jest.fn(async () => meta(candidates));
    const { registry } = createWorkerMetrics({ currentMeta });
    const first = await registry.metrics();
    expect(gaugeValue(first, 'feed_build_meta_up')).toBe(1);
    expect(gaugeValue(first, 'feed_build_candidates')).toBe(120);
    expect(gaugeValue(first, 'feed_build_queue_length')).toBe(20);
    expect(currentMeta).toHaveBeenCalledTimes(1);
    candidates = 90;
    expect(gaugeValue(await registry.metrics(), 'feed_build_candidates')).toBe(90);
    expect(currentMeta).toHaveBeenCalledTimes(2);
  });

  it('when the read fails, then meta_up is 0 and the gauges keep the last values', async () => {
    const currentMeta = jest.fn(async () => meta(120));
    const { registry } = createWorkerMetrics({ currentMeta });
    await registry.metrics();
    currentMeta.mockRejectedValueOnce(new Error('Redis down'));
    const text = await registry.metrics();
    expect(gaugeValue(text, 'feed_build_meta_up')).toBe(0);
    expect(gaugeValue(text, 'feed_build_candidates')).toBe(120);
  });
});
