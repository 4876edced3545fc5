/**
 * Imported first by tools/start-one.ts: traces start (when OTEL_* variables ask for them) under
 * the deployable's name before @feed/api or @feed/worker require express, redis and mongodb.
 */
import { startTelemetry } from '@feed/telemetry';

startTelemetry(process.argv[2] === 'worker' ? 'feed-worker' : 'feed-api');
