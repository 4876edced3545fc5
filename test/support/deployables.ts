/** A deployable run as a process for a test (tools/support/deployables.ts: the benchmarks and the reliability suite start theirs the same way). */
export { startTestDeployable, type DeployableScope, type StartOptions, type TestDeployable } from '../../tools/support/deployables';
