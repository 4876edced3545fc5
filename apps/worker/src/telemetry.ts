/** main.ts's first import: traces start before express, redis and mongodb load, so they can be patched (D5). */
import { startTelemetry } from '@feed/telemetry';

startTelemetry('feed-worker');
