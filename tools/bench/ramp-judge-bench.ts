/**
 * `pnpm bench ramp-judge [--steps N] [--seed S]`: how often the ramp's step judge (SPEC R23)
 * halts a step, over N simulated steps whose counts are drawn (binomial, normal approximation,
 * seeded) from known per-view rates: equal variants (false halts: what Bonferroni over the four
 * engagement guards buys, beside testing each guard at 95 % alone), and a ring whose like rate is
 * 10 % lower (power, by the views each variant had; the judge's minViews is set to the row's
 * views so every row is judged). Pure CPU, no services.
 */
import { judgeStep, seededRandom, stepGuards, type StepGuards, type StepReadout, type VariantCounts } from '@feed/domain';
import { argValue } from './support';

const RATES = { likes: 0.05, collects: 0.02, shares: 0.01, notInterested: 0.03 };

/** A binomial draw by its normal approximation (n * p well above 10 here), clamped to [0, n]. */
function binomial(random: () => number, n: number, p: number): number {
  const u = Math.max(random(), 1e-12);
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
  return Math.min(n, Math.max(0, Math.round(n * p + z * Math.sqrt(n * p * (1 - p)))));
}

function variant(random: () => number, views: number, rates: typeof RATES): VariantCounts {
  const requests = Math.round(views / 5);
  return {
    views,
    requests,
    serverErrors: binomial(random, requests, 0.001),
    degradations: binomial(random, requests, 0.002),
    emptyPages: binomial(random, requests, 0.001),
    likes: binomial(random, views, rates.likes),
    collects: binomial(random, views, rates.collects),
    shares: binomial(random, views, rates.shares),
    notInterested: binomial(random, views, rates.notInterested),
  };
}

/** Share of `steps` simulated steps the judge fails; `perGuard` tests each engagement guard alone at the stated confidence. */
function haltRate(seed: string, steps: number, ringViews: number, legacyViews: number, ringRates: typeof RATES, perGuard: boolean): number {
  const random = seededRandom(seed, ringViews);
  const base = { minViews: ringViews, minRequests: Math.round(ringViews / 5) };
  const guards: StepGuards[] = perGuard ? (['likes', 'collects', 'shares', 'not-interested'] as const).map((g) => stepGuards({ ...base, engagement: [g] })) : [stepGuards(base)];
  let halts = 0;
  for (let i = 0; i < steps; i++) {
    const readout: StepReadout = { ring: variant(random, ringViews, ringRates), legacy: variant(random, legacyViews, RATES) };
    if (guards.some((g) => judgeStep(readout, g).outcome === 'fail')) halts++;
  }
  return halts / steps;
}

export async function runRampJudgeBench(): Promise<void> {
  const steps = Number(argValue('steps', '4000'));
  if (!Number.isSafeInteger(steps) || steps < 1) throw new Error('--steps must be a positive integer');
  const seed = argValue('seed') ?? 'ramp-judge';
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  process.stdout.write(`ramp judge over ${steps} simulated steps per row (seed ${seed}), legacy 10x the ring's views, confidence 0.95\n`);
  process.stdout.write('case                          ring views  halts (Bonferroni, default)  halts (each guard at 95 %)\n');
  const cases = [
    { name: 'equal variants', rates: RATES, views: [2000, 20_000] },
    { name: 'likes 10 % lower on the ring', rates: { ...RATES, likes: RATES.likes * 0.9 }, views: [5000, 20_000, 50_000] },
  ];
  for (const { name, rates, views } of cases) {
    for (const ring of views) {
      const [bonferroni, perGuard] = [false, true].map((each) => haltRate(seed, steps, ring, ring * 10, rates, each));
      process.stdout.write(`${name.padEnd(28)}  ${String(ring).padStart(10)}  ${pct(bonferroni).padStart(27)}  ${pct(perGuard).padStart(26)}\n`);
    }
  }
}
