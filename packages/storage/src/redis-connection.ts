/**
 * Where and how every Redis client of the service connects: the storage client (node-redis) and
 * BullMQ's connections (ioredis, BullMQ's own client), from one parse of the configuration and
 * one policy, on any of the three topologies (one server, a Cluster, a primary behind Sentinels).
 *
 * Policy (both families):
 *  - connect timeout CONNECT_TIMEOUT_MS per attempt;
 *  - reconnect for ever, backing off 50 ms doubling to 2 s (a Redis restart or failover is
 *    survivable without a process restart);
 *  - no per-command timeout in the clients: waits are bounded where they matter with
 *    `withDeadline` (deadline.ts) — the API's per-request Redis budget, a CLI's connect;
 *  - fail-fast (commands rejected at once while disconnected) where a caller degrades instead of
 *    waiting: the API and the worker's storage client. BullMQ's connections queue commands while
 *    disconnected and retry them (BullMQ requires `maxRetriesPerRequest: null`); the worker bounds
 *    what waits on them (the controller's checks, shutdown) with `withDeadline`.
 */
import IORedis, { Cluster, type ClusterOptions, type RedisOptions as IORedisOptions } from 'ioredis';
import type { Config } from '@feed/config';

export const CONNECT_TIMEOUT_MS = 2_000;
const MAX_BACKOFF_MS = 2_000;

/** Milliseconds before reconnect attempt `attempt` (0-based): 50, 100, 200, ... 2000. */
export const reconnectDelay = (attempt: number) => Math.min(50 * 2 ** attempt, MAX_BACKOFF_MS);

export interface RedisNode {
  host: string;
  port: number;
}

/** The settings that say where Redis is (the sentinel ones optional: most callers name a URL or a cluster). */
export type RedisSettings = Pick<Config, 'redisUrl' | 'redisClusterNodes'> & Partial<Pick<Config, 'redisSentinels' | 'redisSentinelMaster'>>;

/**
 * The configured Redis, parsed here once: one URL; the seed nodes of a cluster (REDIS_CLUSTER_NODES);
 * or the Sentinels that name a primary (REDIS_SENTINELS, REDIS_SENTINEL_MASTER).
 */
export type RedisTarget = { mode: 'standalone'; url: string } | { mode: 'cluster'; nodes: RedisNode[] } | { mode: 'sentinel'; sentinels: RedisNode[]; name: string };

const parseNodes = (list: string[]): RedisNode[] =>
  list.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });

export function redisTarget(config: RedisSettings): RedisTarget {
  if (config.redisClusterNodes) return { mode: 'cluster', nodes: parseNodes(config.redisClusterNodes) };
  if (config.redisSentinels) return { mode: 'sentinel', sentinels: parseNodes(config.redisSentinels), name: config.redisSentinelMaster ?? 'mymaster' };
  return { mode: 'standalone', url: config.redisUrl };
}

/** Where a client connects, as the operator configured it (for error messages; no credentials). */
export function describeRedisTarget(config: RedisSettings): string {
  if (config.redisClusterNodes) return `REDIS_CLUSTER_NODES=${config.redisClusterNodes.join(',')}`;
  if (config.redisSentinels) return `REDIS_SENTINELS=${config.redisSentinels.join(',')} (master ${config.redisSentinelMaster ?? 'mymaster'})`;
  return `REDIS_URL=${config.redisUrl.replace(/\/\/[^@/]*@/, '//***@')}`;
}

/** node-redis socket options under the policy. */
export const nodeRedisSocket = { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: reconnectDelay };

/** A BullMQ connection: ioredis under the policy. */
export type BullConnection = IORedis | Cluster;

/** Makes BullMQ connections (each Queue, Worker and QueueEvents wants its own) for the configured Redis. */
export function bullConnectionFactory(config: RedisSettings): () => BullConnection {
  const options: IORedisOptions = { maxRetriesPerRequest: null, connectTimeout: CONNECT_TIMEOUT_MS, retryStrategy: reconnectDelay };
  const target = redisTarget(config);
  if (target.mode === 'cluster') {
    const clusterOptions: ClusterOptions = { redisOptions: options, clusterRetryStrategy: reconnectDelay };
    return () => new Cluster(target.nodes, clusterOptions);
  }
  // ioredis asks the Sentinels for the primary on every (re)connect and reconnects on a failover.
  if (target.mode === 'sentinel') return () => new IORedis({ ...options, sentinels: target.sentinels, name: target.name, sentinelRetryStrategy: reconnectDelay });
  return () => new IORedis(target.url, options);
}
