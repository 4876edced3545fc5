/**
 * Every labelled counter and histogram of both deployables declares its label values (D5), so
 * each series is exported at 0 before its first event; and every label value an alert or the
 * dashboard matches is one of those declared (a typo there would match nothing, forever).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { declaredLabels } from '@feed/telemetry';
import { createApiMetrics, declareHttpRoutes, HTTP_STATUSES } from '@feed/api';
import { createWorkerMetrics } from '@feed/worker';
import request from '../support/contract';
import { ROOT } from '../../tools/support/processes';
import { testApi } from '../support/api';
import { useTestServices } from '../support/services';

const s = useTestServices('metric_labels');

const registries = () => [createApiMetrics().registry, createWorkerMetrics().registry];
const HTTP_HISTOGRAM = 'feed_http_request_duration_seconds';

/** prom-client keeps a metric's name and label names on it, without typing them. */
const describedOf = (metric: object) => ({ name: String(Reflect.get(metric, 'name')), labelNames: Reflect.get(metric, 'labelNames') as string[] });

describe('declared metric labels (D5)', () => {
  it('when both deployables create their metrics, then each labelled counter and histogram has its label values declared and exported at 0', async () => {
    const undeclared: string[] = [];
    for (const registry of registries()) {
      const text = await registry.metrics();
      for (const { name, type: metricType } of await registry.getMetricsAsJSON()) {
        const type = String(metricType);
        const metric = registry.getSingleMetric(name)!;
        const { labelNames } = describedOf(metric);
        if (labelNames.length === 0 || (type !== 'counter' && type !== 'histogram') || name === HTTP_HISTOGRAM) continue;
        const declared = declaredLabels(metric);
        if (!declared || labelNames.some((label) => !declared[label]?.length)) {
          undeclared.push(name);
          continue;
        }
        const sample = Object.fromEntries(labelNames.map((label) => [label, declared[label][0]]));
        const series = type === 'histogram' ? `${name}_count` : name;
        expect(text).toMatch(new RegExp(`^${series}\\{[^}]*${labelNames.map((label) => `${label}="${sample[label]}"`).join('.*')}[^}]*\\} 0$`, 'm'));
      }
    }
    expect(undeclared).toEqual([]);
  });

  it('when the API declares its routes, then each route and unmatched paths exist at 0 for every status, and an undeclared route throws', async () => {
    const { registry, httpDuration: histogram } = createApiMetrics();
    const labelsOf = declareHttpRoutes(histogram, ['GET /a', 'POST /b']);
    const text = await registry.getSingleMetricAsString(HTTP_HISTOGRAM);
    for (const status of HTTP_STATUSES) {
      expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="GET",route="/a",status="${status}"} 0`);
      expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="POST",route="unmatched",status="${status}"} 0`);
    }
    expect(labelsOf('HEAD', '/a', 418)).toEqual({ method: 'HEAD', route: '/a', status: '4xx' });
    expect(labelsOf('GET', '/b', 500)).toEqual({ method: 'GET', route: 'unmatched', status: '500' });
    expect(labelsOf('PROPFIND', undefined, 207)).toEqual({ method: 'OTHER', route: 'unmatched', status: '2xx' });
    expect(() => histogram.observe({ method: 'GET', route: '/c', status: '200' }, 1)).toThrow(/not declared/);
    expect(() => histogram.observe({ method: 'GET', route: '/a', status: '418' }, 1)).toThrow(/not declared/);
  });

  it('when the API app is built, then its latency histogram is declared for its real routes, and a request to each kind of path moves a declared series', async () => {
    const api = testApi(s);
    await request(api.app).get('/healthz').expect(200);
    await request(api.app).head('/healthz');
    await request(api.app).get('/no/such/path?x=1').expect(404);
    await request(api.app).post('/api/app/vid/like').send({}).expect(401);
    const text = await api.metrics.registry.getSingleMetricAsString(HTTP_HISTOGRAM);
    expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="GET",route="/api/app/recommend/vid/list",status="500"} 0`);
    expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="GET",route="/healthz",status="200"} 1`);
    expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="HEAD",route="/healthz",status="200"} 1`);
    expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="GET",route="unmatched",status="404"} 1`);
    expect(text).toContain(`${HTTP_HISTOGRAM}_count{method="POST",route="/api/app/vid/like",status="401"} 1`);
  });

  it('when an alert or the dashboard matches a label value, then that value is declared for its metric', async () => {
    const declared = new Map<string, Record<string, readonly string[]>>();
    for (const registry of registries()) {
      for (const metric of registry.getMetricsAsArray()) {
        const labels = declaredLabels(metric);
        if (labels) declared.set(describedOf(metric).name, labels);
      }
    }
    // The API's routes, as its latency histogram declares them.
    const latency = await testApi(s).metrics.registry.getSingleMetricAsString(HTTP_HISTOGRAM);
    declared.set(HTTP_HISTOGRAM, { status: HTTP_STATUSES, route: [...new Set([...latency.matchAll(/route="([^"]*)"/g)].map(([, route]) => route))] });
    const dir = path.join(ROOT, 'infra/observability');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(ya?ml|json)$/.test(f) && !f.endsWith('.test.yml'));
    const unknown: string[] = [];
    let matchers = 0;
    for (const file of files) {
      const text = readFileSync(path.join(dir, file), 'utf8').replace(/\\"/g, '"');
      for (const [, name, body] of text.matchAll(/\b(feed_[a-z0-9_]+?)(?:_bucket|_count|_sum)?\{([^}]*)\}/g)) {
        for (const [, label, operator, value] of body.matchAll(/(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)) {
          matchers += 1;
          const values = declared.get(name)?.[label];
          const pattern = new RegExp(`^(?:${operator.endsWith('~') ? value : value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')})$`);
          if (!values?.some((v) => pattern.test(v))) unknown.push(`${file}: ${name}{${label}${operator}"${value}"}`);
        }
      }
    }
    expect(matchers).toBeGreaterThan(3);
    expect(unknown).toEqual([]);
  });
});
