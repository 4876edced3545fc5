/**
 * BullMQ's Redis connections. BullMQ uses ioredis, its primary client: its node-redis adapter does
 * not drive a node-redis cluster client (jobs never ran on a Redis Cluster in our test). They are
 * made under the service's one connection policy (`@feed/storage` redis-connection.ts).
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

  /**
   * Closes `closing` (BullMQ's workers and queues, in order) for at most `boundMs` (BullMQ's close waits
   * on Redis, forever when Redis is gone), then the connections: politely when BullMQ closed, at once otherwise.
   */
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

/**
 * BullMQ's own spans (bullmq-otel) when traces are on (D5): a job added and a job processed are
 * spans, and the build's phases open theirs as children of the processing one. Off, no option.
 */
export function bullTelemetry(): { telemetry: BullMQOtel } | Record<string, never> {
  return telemetryStarted() ? { telemetry: new BullMQOtel({ tracerName: 'feed-worker' }) } : {};
}
