/**
 * Labelled metrics that exist before their first event (SPEC D5): a series appearing at 1 hides its
 * first event from `increase()` (no earlier sample). So every declared combination is exported at
 * 0 from the start, and an undeclared value throws `UndeclaredLabelError`.
 */

/** The known values of each label of one metric. */
export type LabelDeclaration = Record<string, readonly string[]>;

export class UndeclaredLabelError extends Error {
  constructor(metric: string, label: string, value: unknown) {
    super(`metric ${metric}: label ${label}="${String(value)}" was not declared`);
    this.name = 'UndeclaredLabelError';
  }
}

type Labels = Record<string, string | number>;

/** The parts of a prom-client Counter or Histogram this module uses (prom-client stays the apps' dependency). */
interface LabelledMetric {
  name: string;
  labelNames?: readonly string[];
  inc?: (labels: unknown, value?: number) => void;
  observe?: (labels: unknown, value?: number) => void;
  zero?: (labels: Labels) => void;
  labels?: (...args: unknown[]) => unknown;
}

/** Every combination of the declared values, one label set each. */
export function labelCombinations(declared: LabelDeclaration): Labels[] {
  return Object.entries(declared).reduce<Labels[]>((sets, [label, values]) => sets.flatMap((set) => values.map((value) => ({ ...set, [label]: value }))), [{}]);
}

/** Throws unless `labels` has exactly the declared labels, each with a declared value (every labelled event: no array built). */
function checkLabels(name: string, declared: ReadonlyMap<string, ReadonlySet<string>>, labels: unknown): void {
  if (typeof labels !== 'object' || labels === null) throw new UndeclaredLabelError(name, [...declared.keys()].join(','), 'none');
  for (const [label, values] of declared) {
    const value = (labels as Labels)[label];
    if (!values.has(String(value))) throw new UndeclaredLabelError(name, label, value);
  }
  for (const label in labels) if (!declared.has(label)) throw new UndeclaredLabelError(name, label, (labels as Labels)[label]);
}

/** Exports `metric` at 0 for every `declared` combination; an undeclared value throws. Returns the metric. */
export function declareLabels<M extends object>(declaredMetric: M, declared: LabelDeclaration): M {
  const metric = declaredMetric as LabelledMetric;
  const known = new Map(Object.entries(declared).map(([label, values]) => [label, new Set(values)]));
  for (const method of ['inc', 'observe'] as const) {
    const original = metric[method]?.bind(metric);
    if (!original) continue;
    metric[method] = (labels: unknown, value?: number) => {
      checkLabels(metric.name, known, labels);
      original(labels, value);
    };
  }
  // A histogram's `labels(...)` child observes past `observe`: checked here instead.
  const labelled = metric.labels?.bind(metric);
  if (labelled && metric.zero) {
    metric.labels = (...args: unknown[]) => {
      if (typeof args[0] === 'object') checkLabels(metric.name, known, args[0]);
      else checkLabels(metric.name, known, Object.fromEntries((metric.labelNames ?? Object.keys(declared)).map((label, i) => [label, args[i]])));
      return labelled(...args);
    };
  }
  for (const labels of labelCombinations(declared)) {
    if (metric.zero) metric.zero(labels);
    else metric.inc!(labels, 0);
  }
  declarations.set(declaredMetric, declared);
  return declaredMetric;
}

const declarations = new WeakMap<object, LabelDeclaration>();

/** The label values `metric` was declared with, if it was. */
export function declaredLabels(metric: object): LabelDeclaration | undefined {
  return declarations.get(metric);
}

/** What `dependencyUpGauge` gives prom-client's Gauge, which the apps pass in (prom-client stays theirs). */
type GaugeOptions<G, R> = { name: string; help: string; labelNames: string[]; registers: R[]; collect(this: G): Promise<void> };

/** `feed_dependency_up`, the same in both deployables (SPEC R17): at each scrape, each store's `up()` answer, 1 or 0. */
export function dependencyUpGauge<G extends { set(labels: { dependency: string }, value: number): void }, R>(Gauge: new (options: GaugeOptions<G, R>) => G, registry: R, stores: readonly string[], up: () => Promise<Record<string, number> | undefined>): G {
  const gauge = new Gauge({
    name: 'feed_dependency_up',
    help: 'Whether a store answered the probe of this scrape within 250 ms (1) or not (0)',
    labelNames: ['dependency'],
    registers: [registry],
    async collect() {
      const answered = await up();
      if (answered) for (const dependency of stores) this.set({ dependency }, answered[dependency]);
    },
  });
  return declareLabels(gauge, { dependency: stores });
}
