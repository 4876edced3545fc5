/**
 * Where and how every Redis client connects (node-redis for storage, ioredis for BullMQ), from one
 * parse of the configuration, on one server, a Cluster or a primary behind Sentinels. One policy:
 *  - connect timeout CONNECT_TIMEOUT_MS; reconnect for ever, 50 ms doubling to 2 s;
 *  - no per-command timeout: waits are bounded where they matter with `withDeadline` (deadline.ts);
 *  - fail-fast while disconnected where a caller degrades (the API, the worker's storage client).
 *    BullMQ's connections queue and retry (it requires `maxRetriesPerRequest: null`); the worker
 *    bounds what waits on them with `withDeadline`.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import IORedis, { Cluster, type ClusterOptions, type RedisOptions as IORedisOptions } from 'ioredis';
import type { Config } from '@feed/config';
import { sentinelBullConnection, type SentinelOptions } from './redis-sentinel';

export const CONNECT_TIMEOUT_MS = 2_000;
const MAX_BACKOFF_MS = 2_000;

/** Milliseconds before reconnect attempt `attempt` (0-based): 50, 100, 200, ... 2000. */
export const reconnectDelay = (attempt: number) => Math.min(50 * 2 ** attempt, MAX_BACKOFF_MS);

export interface RedisNode {
  host: string;
  port: number;
}

/** The settings that say where Redis is and how to log in (all but two optional: most callers name a URL or a cluster). */
export type RedisSettings = Pick<Config, 'redisUrl' | 'redisClusterNodes'> &
  Partial<
    Pick<
      Config,
      | 'redisSentinels' | 'redisSentinelMaster' | 'redisUsername' | 'redisPassword' | 'redisTls' | 'redisTlsCaFile' | 'redisTlsCertFile' | 'redisTlsKeyFile'
      | 'redisTlsServername' | 'redisSentinelUsername' | 'redisSentinelPassword' | 'redisSentinelTls'
    >
  >;

/** How to log in to a node: ACL user, password, TLS (absent: plain TCP). */
export interface RedisAccess {
  username?: string;
  password?: string;
  tls?: TlsOptions;
}

/** TLS options when `on`: the CA, certificate and key files read now, an unreadable one named by its setting. */
function tlsOptions(config: RedisSettings, on: boolean | undefined): TlsOptions | undefined {
  if (!on) return undefined;
  const read = (setting: string, file: string | undefined) => {
    try {
      return file === undefined ? undefined : readFileSync(file);
    } catch (err) {
      throw new Error(`${setting}=${file}: ${(err as Error).message}`);
    }
  };
  const files = { ca: read('REDIS_TLS_CA_FILE', config.redisTlsCaFile), cert: read('REDIS_TLS_CERT_FILE', config.redisTlsCertFile), key: read('REDIS_TLS_KEY_FILE', config.redisTlsKeyFile) };
  return defined({ ...files, servername: config.redisTlsServername });
}

/** `value` without its undefined fields (a client's options spread over a URL's would erase them). */
const defined = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;

/** The data nodes' access (REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS*) and the Sentinels' own (REDIS_SENTINEL_*, the same TLS files). */
export function dataAccess(config: RedisSettings): RedisAccess {
  const tls = config.redisTls || (redisTarget(config).mode === 'standalone' && config.redisUrl.startsWith('rediss:'));
  return defined({ username: config.redisUsername, password: config.redisPassword, tls: tlsOptions(config, tls) });
}
export const sentinelAccess = (config: RedisSettings): RedisAccess =>
  defined({ username: config.redisSentinelUsername, password: config.redisSentinelPassword, tls: tlsOptions(config, config.redisSentinelTls) });

/** node-redis options for one Sentinel (REDIS_SENTINEL_*), for the storage client and BullMQ's Sentinel watch. */
export function sentinelOptions(config: RedisSettings): SentinelOptions {
  const access = sentinelAccess(config);
  return (sentinel) => nodeRedisOptions(access, sentinel);
}

/** A Redis setting is wrong (credentials, certificate, master name): the process stops, naming it. */
export class RedisMisconfigured extends Error {}

/** A no-reconnect-cures-it error (refused credentials, untrusted certificate) as one naming the `prefix` settings; else undefined. */
export function misconfiguration(err: Error, prefix: 'REDIS' | 'REDIS_SENTINEL', where: string): RedisMisconfigured | undefined {
  if (err instanceof RedisMisconfigured) return err;
  const code = (err as { code?: string }).code ?? '';
  if (/^(WRONGPASS|NOAUTH|NOPERM)|invalid (username-)?password|AUTH <password> called without/i.test(err.message)) {
    return new RedisMisconfigured(`${prefix}_USERNAME/${prefix}_PASSWORD: ${where} refused the credentials: ${err.message}`);
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS/.test(code)) return new RedisMisconfigured(`REDIS_TLS_CA_FILE/REDIS_TLS_SERVERNAME: the certificate of ${where} is not trusted: ${err.message}`);
  return undefined;
}

/** node-redis client options for one node (or, without `node`, the defaults of a cluster's or a URL's) under the policy. */
export function nodeRedisOptions(access: RedisAccess, node?: RedisNode) {
  const socket = { ...nodeRedisSocket, ...node, ...(access.tls && { tls: true as const, ...access.tls }) };
  return defined({ username: access.username, password: access.password, socket });
}

/** The configured Redis, parsed once: a URL, cluster seed nodes, or the Sentinels naming a primary. */
export type RedisTarget = { mode: 'standalone'; url: string } | { mode: 'cluster'; nodes: RedisNode[] } | { mode: 'sentinel'; sentinels: RedisNode[]; name: string };

const parseNodes = (list: string[]): RedisNode[] =>
  list.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });

export function redisTarget(config: RedisSettings): RedisTarget {
  if (config.redisClusterNodes) return { mode: 'cluster', nodes: parseNodes(config.redisClusterNodes) };
  if (config.redisSentinels) return { mode: 'sentinel', sentinels: parseNodes(config.redisSentinels), name: config.redisSentinelMaster ?? 'mymaster' };
  // REDIS_TLS=true makes a redis:// URL a rediss:// one (node-redis refuses a TLS socket beside redis://).
  return { mode: 'standalone', url: config.redisTls ? config.redisUrl.replace(/^redis:/, 'rediss:') : config.redisUrl };
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
  const { username, password, tls } = dataAccess(config);
  const options: IORedisOptions = defined({ maxRetriesPerRequest: null, connectTimeout: CONNECT_TIMEOUT_MS, retryStrategy: reconnectDelay, username, password, tls });
  const target = redisTarget(config);
  if (target.mode === 'cluster') {
    const clusterOptions: ClusterOptions = { redisOptions: options, clusterRetryStrategy: reconnectDelay };
    return () => new Cluster(target.nodes, clusterOptions);
  }
  if (target.mode === 'sentinel') {
    const sentinels = sentinelAccess(config);
    const ioredisSentinel = defined({ sentinelUsername: sentinels.username, sentinelPassword: sentinels.password, sentinelTLS: sentinels.tls, enableTLSForSentinelMode: tls !== undefined });
    return sentinelBullConnection(target, { ...options, ...ioredisSentinel, sentinelRetryStrategy: reconnectDelay }, sentinelOptions(config));
  }
  const url = new URL(target.url);
  return () => new IORedis(target.url, url.protocol === 'rediss:' ? { ...options, tls: { ...tls } } : options);
}
