/**
 * BullMQ's Redis connections. BullMQ uses ioredis, its primary client: its node-redis adapter does
 * not drive a node-redis cluster client (jobs never ran on a Redis Cluster in our test).
 */
import IORedis, { Cluster } from 'ioredis';
import type { Config } from '@feed/config';
import { oncePerMessage, type Logger } from '@feed/logger';

export type BullConnection = IORedis | Cluster;

export function bullConnectionFactory(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): () => BullConnection {
  const options = { maxRetriesPerRequest: null };
  if (config.redisClusterNodes) {
    const nodes = config.redisClusterNodes.map((node) => {
      const [host, port] = node.split(':');
      return { host, port: Number(port) };
    });
    return () => new Cluster(nodes, { redisOptions: options });
  }
  return () => new IORedis(config.redisUrl, options);
}

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
   * Runs BullMQ's own close for at most `boundMs` (it waits on Redis, forever when Redis is gone),
   * then closes the connections: politely when BullMQ closed, at once otherwise.
   */
  async closeWithin(boundMs: number, close: () => Promise<void>, logger: Logger): Promise<void> {
    const closing = close();
    closing.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([closing.then(() => true, () => false), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), boundMs)))]);
    clearTimeout(timer);
    if (!closed) logger.warn('bullmq did not close in time (Redis unreachable?), disconnecting', { boundMs });
    await Promise.all(this.made.map((c) => (closed ? c.quit().catch(() => c.disconnect()) : c.disconnect())));
  }
}
