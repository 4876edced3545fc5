/**
 * BullMQ's Redis connections, ioredis (its node-redis adapter did not drive a cluster client in our
 * test), under the service's one connection policy (redis-connection.ts).
 */
import { bullConnectionFactory, withDeadline, type BullConnection } from '@feed/storage';
import { BullMQOtel } from 'bullmq-otel';
import { oncePerMessage, type Logger } from '@feed/logger';
import { telemetryStarted } from '@feed/telemetry';

export { bullConnectionFactory, type BullConnection };

/** The same BullMQ error is logged at most once per this interval (a Redis outage repeats it). */
const ERROR_LOG_INTERVAL_MS = 30_000;

/** Logs BullMQ `error` events as structured lines, once per distinct message per interval. */
export const bullErrorLogger = (logger: Logger, source: string) => oncePerMessage(ERROR_LOG_INTERVAL_MS, (err) => logger.warn('bullmq error', { source, err: err.message }));

/** Hands out BullMQ connections and remembers them, so they are closed after BullMQ. */
export class BullConnections {
  private readonly made: BullConnection[] = [];

  constructor(private readonly factory: () => BullConnection) {}

  readonly next = (): BullConnection => {
    const client = this.factory();
    this.made.push(client);
    return client;
  };

  /** Closes `closing` in order within `boundMs` (BullMQ's close waits on Redis forever), then the connections. */
  async closeWithin(boundMs: number, closing: Array<{ close(): Promise<unknown> } | undefined>, logger: Logger): Promise<void> {
    const closeInOrder = async () => {
      for (const c of closing) await c?.close();
    };
    const closed = await withDeadline(closeInOrder(), boundMs, 'bullmq close').then(() => true, () => false);
    if (!closed) logger.warn('bullmq did not close in time (Redis unreachable?), disconnecting', { boundMs });
    if (closed) await Promise.all(this.made.map((c) => c.quit().catch(() => c.disconnect())));
    else for (const c of this.made) c.disconnect();
  }
}

/** bullmq-otel's job spans (D5) when traces are on; the build's phases are their children. */
export function bullTelemetry(): { telemetry: BullMQOtel } | Record<string, never> {
  return telemetryStarted() ? { telemetry: new BullMQOtel({ tracerName: 'feed-worker' }) } : {};
}
