/**
 * Where and how every Redis client of the service connects: the storage client (node-redis) and
 * BullMQ's connections (ioredis, BullMQ's own client), from one parse of the configuration and
 * one policy.
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

/** The configured Redis: one URL, or the seed nodes of a cluster (REDIS_CLUSTER_NODES, parsed here once). */
export type RedisTarget = { mode: 'standalone'; url: string } | { mode: 'cluster'; nodes: RedisNode[] };

export function redisTarget(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): RedisTarget {
  if (!config.redisClusterNodes) return { mode: 'standalone', url: config.redisUrl };
  return {
    mode: 'cluster',
    nodes: config.redisClusterNodes.map((node) => {
      const at = node.lastIndexOf(':');
      return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
    }),
  };
}

/** Where a client connects, as the operator configured it (for error messages; no credentials). */
export function describeRedisTarget(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): string {
  return config.redisClusterNodes ? `REDIS_CLUSTER_NODES=${config.redisClusterNodes.join(',')}` : `REDIS_URL=${config.redisUrl.replace(/\/\/[^@/]*@/, '//***@')}`;
}

/** node-redis socket options under the policy. */
export const nodeRedisSocket = { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: reconnectDelay };

/** A BullMQ connection: ioredis under the policy. */
export type BullConnection = IORedis | Cluster;

/** Makes BullMQ connections (each Queue, Worker and QueueEvents wants its own) for the configured Redis. */
export function bullConnectionFactory(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): () => BullConnection {
  const options: IORedisOptions = { maxRetriesPerRequest: null, connectTimeout: CONNECT_TIMEOUT_MS, retryStrategy: reconnectDelay };
  const target = redisTarget(config);
  if (target.mode === 'cluster') {
    const clusterOptions: ClusterOptions = { redisOptions: options, clusterRetryStrategy: reconnectDelay };
    return () => new Cluster(target.nodes, clusterOptions);
  }
  return () => new IORedis(target.url, options);
}
