/**
 * The first import of main.ts: traces start (when OTEL_* variables ask for them) before express,
 * redis and mongodb are required, so that their instrumentations can patch them (D5).
 */
import { startTelemetry } from '@feed/telemetry';

startTelemetry('feed-api');
