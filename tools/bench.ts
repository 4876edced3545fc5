/** `pnpm bench <name> [options]`: benchmark scripts that print numbers (never timed tests). */
import { runApiBench } from './bench/api-bench';
import { runBuildBench } from './bench/build-bench';
import { runCountersBench } from './bench/counters-bench';
import { runFallbackBench } from './bench/fallback-bench';
import { runLikesBench } from './bench/likes-bench';
import { runGuestMemoryBench, runMemoryBench } from './bench/memory-bench';
import { runRampJudgeBench } from './bench/ramp-judge-bench';
import { runSentinelFenceBench } from './bench/sentinel-fence-bench';
import { runSoakBench } from './bench/soak-bench';

const benches: Record<string, () => Promise<void>> = { build: runBuildBench, api: runApiBench, memory: runMemoryBench, guests: runGuestMemoryBench, counters: runCountersBench, likes: runLikesBench, soak: runSoakBench, 'ramp-judge': runRampJudgeBench, fallback: runFallbackBench, 'sentinel-fence': runSentinelFenceBench };

const name = process.argv[2];
if (!name || !benches[name]) {
  process.stderr.write(`usage: pnpm bench <${Object.keys(benches).join('|')}> [options]\n`);
  process.exit(2);
}
benches[name]().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
