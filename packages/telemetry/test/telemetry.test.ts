/**
 * Traces are opt-in (D5): without OTEL_* variables the SDK is never loaded, so nothing is
 * patched or exported; with an endpoint (or an exporter) named, it starts.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { tracesRequested } from '../src';

const ROOT = path.resolve(__dirname, '../../..');

/** In a fresh Node process: start telemetry with `env`, then list the OpenTelemetry SDK modules loaded. */
function loadedSdkModules(env: Record<string, string>): { started: boolean; sdk: string[] } {
  const script = `
    const { startTelemetry, stopTelemetry } = require('@feed/telemetry');
    const started = startTelemetry('probe');
    const sdk = Object.keys(require.cache).filter((m) => /@opentelemetry[\\\\/](sdk-|instrumentation)/.test(m)).map((m) => m.replace(/.*node_modules[\\\\/]/, ''));
    stopTelemetry().then(() => process.stdout.write(JSON.stringify({ started, sdk: [...new Set(sdk.map((m) => m.split(/[\\\\/]/).slice(0, 2).join('/')))] })));
  `;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_')));
  return JSON.parse(execFileSync(process.execPath, ['--conditions=@feed/source', '--import', 'tsx', '-e', script], { cwd: ROOT, env: { ...clean, ...env }, encoding: 'utf8' })) as { started: boolean; sdk: string[] };
}

describe('telemetry (D5)', () => {
  it('when no OTEL_* variable asks for traces, then no SDK or instrumentation module is even loaded', () => {
    expect(loadedSdkModules({})).toEqual({ started: false, sdk: [] });
    expect(loadedSdkModules({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_SDK_DISABLED: 'true' })).toEqual({ started: false, sdk: [] });
  });

  it('when OTEL_EXPORTER_OTLP_ENDPOINT is set, then the SDK and the HTTP, Express, Redis and MongoDB instrumentations start', () => {
    const { started, sdk } = loadedSdkModules({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' });
    expect(started).toBe(true);
    expect(sdk).toEqual(expect.arrayContaining(['@opentelemetry/sdk-node', '@opentelemetry/instrumentation-http', '@opentelemetry/instrumentation-express', '@opentelemetry/instrumentation-redis', '@opentelemetry/instrumentation-mongodb']));
  });

  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
  ])('when the environment is %j, then traces requested is %s', (env, requested) => {
    expect(tracesRequested(env)).toBe(requested);
  });
});
