/** The worker's public entry for the CLI, `pnpm start`, benchmarks and tests; `main.ts` is the runnable one. */
export { startWorker, type RunningWorker } from './main';
export { buildDepsFrom, runDailyBuild, type BuildDeps, type BuildOptions, type BuildResult } from './daily-build/daily-build';
export { promoteHeldVersion, PromoteRefusedError, type PromoteDeps, type PromoteResult } from './daily-build/promote-held';
export { BUILD_QUEUE, PROMOTE_JOB, SCHEDULER_ID, buildJobOptions, startBuildQueue, type BuildJobData } from './jobs/build-queue';
export { bullConnectionFactory } from './jobs/bull-connection';
export { CandidateColumns } from './daily-build/candidate-columns';
export { createWorkerMetrics, type WorkerMetrics } from './metrics';
export { buildSchedule, heldReport, reportVersion, summarizeVersions } from './inspect/inspect-versions';
export { driveRamp } from './controller/ramp-driver';
