import { Counter, Histogram, Registry } from 'prom-client';
import { declareLabels, UndeclaredLabelError } from '@feed/telemetry';

function metrics() {
  const registry = new Registry();
  const counter = declareLabels(new Counter({ name: 'test_events_total', help: 'events', labelNames: ['kind', 'result'], registers: [registry] }), { kind: ['a', 'b'], result: ['ok', 'failed'] });
  const histogram = declareLabels(new Histogram({ name: 'test_seconds', help: 'seconds', labelNames: ['result'], buckets: [1], registers: [registry] }), { result: ['ok', 'failed'] });
  return { registry, counter, histogram };
}

describe('declared label values (D5)', () => {
  it('when a counter and a histogram are declared, then every combination is exported at 0 before any event', async () => {
    const { registry } = metrics();
    const text = await registry.metrics();
    for (const kind of ['a', 'b']) for (const result of ['ok', 'failed']) expect(text).toContain(`test_events_total{kind="${kind}",result="${result}"} 0`);
    expect(text).toContain('test_seconds_count{result="failed"} 0');
    expect(text).toContain('test_seconds_bucket{le="+Inf",result="ok"} 0');
  });

  it('when a declared value is counted, then only its series moves', async () => {
    const { counter, histogram, registry } = metrics();
    counter.inc({ kind: 'b', result: 'failed' });
    counter.labels('a', 'ok').inc(2);
    histogram.startTimer()({ result: 'ok' });
    const text = await registry.metrics();
    expect(text).toContain('test_events_total{kind="b",result="failed"} 1');
    expect(text).toContain('test_events_total{kind="a",result="ok"} 2');
    expect(text).toContain('test_events_total{kind="a",result="failed"} 0');
    expect(text).toContain('test_seconds_count{result="ok"} 1');
  });

  it('when a value, a label or no label set was not declared, then counting it throws and exports nothing new', async () => {
    const { counter, histogram, registry } = metrics();
    expect(() => counter.inc({ kind: 'c', result: 'ok' })).toThrow(UndeclaredLabelError);
    expect(() => counter.inc({ kind: 'a' } as never)).toThrow(UndeclaredLabelError);
    expect(() => counter.inc()).toThrow(UndeclaredLabelError);
    expect(() => counter.labels('a', 'maybe').inc()).toThrow(UndeclaredLabelError);
    expect(() => histogram.observe({ result: 'slow' }, 1)).toThrow(UndeclaredLabelError);
    expect(() => histogram.startTimer()({ result: 'slow' })).toThrow(UndeclaredLabelError);
    expect(() => histogram.labels({ result: 'slow' }).observe(1)).toThrow(UndeclaredLabelError);
    const text = await registry.metrics();
    expect(text).not.toMatch(/kind="c"|result="maybe"|result="slow"/);
  });
});
