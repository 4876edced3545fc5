/**
 * The deployment policies an SRE relies on, checked over parsed Kubernetes manifests: each a
 * plain function of the documents, so the test can also show it catches a broken copy.
 */

/** The fields of a manifest the policies read (the schemas check the rest). */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: ManifestSpec;
  data?: Record<string, string>;
}

interface Probe {
  httpGet?: { path: string };
  periodSeconds?: number;
  failureThreshold?: number;
}

interface Container {
  name: string;
  image: string;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { runAsNonRoot?: boolean; readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}

interface ManifestSpec {
  replicas?: number;
  selector?: { matchLabels?: Record<string, string> };
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  template?: {
    metadata?: { labels?: Record<string, string> };
    spec: {
      terminationGracePeriodSeconds?: number;
      securityContext?: { runAsNonRoot?: boolean };
      topologySpreadConstraints?: Array<{ topologyKey: string }>;
      containers: Container[];
    };
  };
}

/** `<registry>/<name>:<tag>` with a tag that is not `latest` (no tag means latest). */
const PINNED_IMAGE = /^[^\s:]+(:\d+)?\/[^\s:]+:(?!latest$)[\w][\w.-]{0,127}$/;

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels?.[key] === value);

/** Every broken policy, as "<kind>/<name>: what" (empty when all hold). */
export function policyViolations(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const budgets = manifests.filter((m) => m.kind === 'PodDisruptionBudget');
  for (const deployment of manifests.filter((m) => m.kind === 'Deployment')) {
    const id = `Deployment/${deployment.metadata.name}`;
    const pod = deployment.spec?.template;
    if (!pod) {
      problems.push(`${id}: no pod template`);
      continue;
    }
    const covering = budgets.filter((b) => matches(b.spec?.selector?.matchLabels, pod.metadata?.labels));
    if (covering.length === 0) problems.push(`${id}: no PodDisruptionBudget selects its pods`);
    for (const budget of covering) {
      const { minAvailable, maxUnavailable } = budget.spec!;
      if (minAvailable === undefined && maxUnavailable === undefined) problems.push(`${id}: its PodDisruptionBudget sets neither minAvailable nor maxUnavailable`);
      if (typeof minAvailable === 'number' && minAvailable >= (deployment.spec?.replicas ?? 1)) problems.push(`${id}: its PodDisruptionBudget's minAvailable blocks every drain`);
      if (maxUnavailable === 0 || maxUnavailable === '0%') problems.push(`${id}: its PodDisruptionBudget's maxUnavailable blocks every drain`);
    }
    const keys = (pod.spec.topologySpreadConstraints ?? []).map((c) => c.topologyKey);
    for (const key of ['kubernetes.io/hostname', 'topology.kubernetes.io/zone']) if (!keys.includes(key)) problems.push(`${id}: no topology spread over ${key}`);
    for (const container of pod.spec.containers) {
      const where = `${id} container ${container.name}`;
      if (!PINNED_IMAGE.test(container.image)) problems.push(`${where}: image ${container.image} is not pinned to a built tag (no :latest)`);
      if (container.readinessProbe?.httpGet?.path !== '/readyz') problems.push(`${where}: readiness probe is not /readyz`);
      if (container.livenessProbe?.httpGet?.path !== '/healthz') problems.push(`${where}: liveness probe is not /healthz`);
      for (const kind of ['requests', 'limits'] as const)
        for (const resource of ['cpu', 'memory']) if (!container.resources?.[kind]?.[resource]) problems.push(`${where}: no ${resource} in resources.${kind}`);
      if (container.securityContext?.runAsNonRoot !== true && pod.spec.securityContext?.runAsNonRoot !== true) problems.push(`${where}: may run as root`);
      if (container.securityContext?.readOnlyRootFilesystem !== true) problems.push(`${where}: root filesystem is writable`);
      if (container.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${where}: privilege escalation allowed`);
    }
  }
  return problems;
}
