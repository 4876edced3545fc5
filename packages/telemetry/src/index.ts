/**
 * OpenTelemetry traces (SPEC D5), configured by the standard `OTEL_*` variables, started only when
 * one asks for traces (an OTLP endpoint, or `OTEL_TRACES_EXPORTER` other than `none`). Unset, no SDK
 * is loaded and nothing patched: the service's own spans cost a function call. Started, it exports
 * HTTP, node-redis and MongoDB spans beside the service's own. `startTelemetry` must run before
 * express, redis and mongodb are required: each `main.ts` imports its `telemetry.ts` first.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { context, INVALID_SPAN_CONTEXT, trace, SpanStatusCode, type Span } from '@opentelemetry/api';

export const tracer = trace.getTracer('short-feed');

let started: { shutdown(): Promise<void> } | undefined;

/** Longest the SDK's last export may hold a stopping process (the exporter's own 10 s is D4's whole budget); then dropped. */
export const TELEMETRY_SHUTDOWN_MS = 1_500;
/** What a query string's values become in a span: the keys stay, so the request's shape is still visible. */
export const REDACTED = 'REDACTED';

/** What a key looks like; anything else where a key goes may be the secret itself (`?<token>`). */
const KEY_LIKE = /^[A-Za-z_][A-Za-z0-9_.[\]-]{0,39}$/;

/** `a=1&token=s` -> `a=REDACTED&token=REDACTED` (D5): no URL value recorded verbatim; a bare or odd part is `REDACTED` whole. */
export function redactQuery(query: string): string {
  const parts = [...new URLSearchParams(query)].map(([key, value]) => (!/^=*$/.test(value) && KEY_LIKE.test(key) ? `${encodeURIComponent(key)}=${REDACTED}` : REDACTED));
  return [...new Set(parts)].join('&');
}
/** The HTTP server span of the active request (the http instrumentation keeps it in the context). */
let requestSpan: () => Span | undefined = () => undefined;

/** Whether the environment asks for traces (the OTEL_* variables). */
export function tracesRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER);
}

/** Starts the SDK when the environment asks for traces; `serviceName` unless OTEL_SERVICE_NAME names it. */
export function startTelemetry(serviceName: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (started || !tracesRequested(env)) return Boolean(started);
  env.OTEL_SERVICE_NAME ??= serviceName;
  // Loaded only here: without OTEL_* variables the SDK and its instrumentations are never required.
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { ExpressInstrumentation, ExpressLayerType } = require('@opentelemetry/instrumentation-express') as typeof import('@opentelemetry/instrumentation-express');
  const { RedisInstrumentation } = require('@opentelemetry/instrumentation-redis') as typeof import('@opentelemetry/instrumentation-redis');
  const { MongoDBInstrumentation } = require('@opentelemetry/instrumentation-mongodb') as typeof import('@opentelemetry/instrumentation-mongodb');
  const { getRPCMetadata } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  requestSpan = () => getRPCMetadata(context.active())?.span;
  const sdk = new NodeSDK({
    instrumentations: [
      // Probes and scrapes are not traces worth keeping.
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)\b/.test(req.url ?? '') || untracedPorts.has(req.socket?.localPort ?? -1),
        ignoreOutgoingRequestHook: (req) => req.host === '127.0.0.1' && untracedPorts.has(Number(req.port)),
        // The hook's attributes replace the instrumentation's: `url.query` keeps the keys only.
        startIncomingSpanHook: (req) => {
          const query = (req.url ?? '').split('?').slice(1).join('?');
          return query ? { 'url.query': redactQuery(query) } : {};
        },
      }),
      // Route spans, not one per middleware (request id, CORS, body parser).
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      new RedisInstrumentation(),
      new MongoDBInstrumentation(),
    ],
  });
  sdk.start();
  started = sdk;
  return true;
}

/** Local ports whose requests, to them and served by them, make no trace, nor anything they do (`untracedPort`). */
const untracedPorts = new Set<number>();

/** Requests to 127.0.0.1:`port` (the API's start warm-up: likes of no video) make no trace until the returned function is called. */
export function untracedPort(port: number): () => void {
  untracedPorts.add(port);
  return () => void untracedPorts.delete(port);
}

/** Whether the SDK runs in this process. */
export function telemetryStarted(): boolean {
  return Boolean(started);
}

/** Flushes and stops the SDK within `budgetMs`; `false` when it gave up (an unreachable collector). */
export async function stopTelemetry(budgetMs = TELEMETRY_SHUTDOWN_MS): Promise<boolean> {
  const sdk = started;
  started = undefined;
  if (!sdk) return true;
  const settled = new AbortController();
  try {
    return await Promise.race([sdk.shutdown().then(() => true), sleep(budgetMs, false, { signal: settled.signal })]);
  } finally {
    settled.abort();
  }
}

/** What `inSpan` hands `fn` when no SDK runs: no span, no context switch on the hot path. */
const UNTRACED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Runs `fn` in a child span of the active one, ended when it settles (an error marks it). */
export async function inSpan<T>(name: string, attributes: Record<string, string | number | boolean>, fn: (span: Span) => Promise<T>): Promise<T> {
  if (!started) return fn(UNTRACED);
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err instanceof Error ? err : String(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Sets attributes on the HTTP request's span (the request id, the strategy that served), if traced. */
export function annotateRequestSpan(attributes: Record<string, string | number | boolean>): void {
  requestSpan()?.setAttributes(attributes);
}

export * from './declared-labels';
