/**
 * node-redis v5 connection, standalone, cluster or behind Sentinels (SPEC D2, R22), behind one
 * small interface. Not v6: its default per-command timer measured 3.5-6x slower on EVALSHA and
 * HGET here; waits are bounded by redis-connection.ts's policy and explicit deadlines instead.
 */
import { createClient, createCluster, RESP_TYPES } from 'redis';
import { logger, oncePerMessage } from '@feed/logger';
import { withDeadline } from './deadline';
import {
  CONNECT_TIMEOUT_MS, dataAccess, describeRedisTarget, misconfiguration, nodeRedisOptions, reconnectDelay, redisTarget, sentinelOptions, type RedisAccess, type RedisNode, type RedisSettings,
} from './redis-connection';
import { askSentinels, isPrimary, NotDurableError, replicaCount, sentinelsAgree, watchSentinels, writeFence, type SentinelEvent, type SentinelOptions } from './redis-sentinel';

export { NotDurableError } from './redis-sentinel';

type StandaloneClient = ReturnType<typeof createClient>;
type ClusterClient = ReturnType<typeof createCluster>;

/** The commands the service sends, each on one slot's keys, so all three clients satisfy it (checked in `connectRedis`). */
type RedisCommands = Pick<
  StandaloneClient,
  | 'get' | 'set' | 'del' | 'exists' | 'expire' | 'pExpire' | 'pExpireAt' | 'ttl' | 'pTTL' | 'pExpireTime' | 'rename' | 'strLen' | 'mGet'
  | 'hGet' | 'hmGet' | 'hSet' | 'hGetAll' | 'hLen' | 'hExists' | 'hDel' | 'hIncrBy'
  | 'lRange' | 'lLen' | 'rPush'
  | 'sAdd' | 'sRem' | 'sCard' | 'sMembers' | 'sRandMemberCount'
  | 'xAdd' | 'xRevRange'
  | 'evalSha' | 'eval' | 'memoryUsage'
>;

export interface Redis extends RedisCommands {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (err: Error) => void): unknown;
  /** Batches of keys matching `pattern`: SCAN on a standalone server, on every master of a cluster. */
  scanKeys(pattern: string, count?: number): AsyncIterable<string[]>;
  /** MGET returning raw bytes (binary values such as the fingerprint lists). */
  mGetBuffers(keys: string[]): Promise<Array<Buffer | null>>;
  /** HGET returning raw bytes (a guest device's record). */
  hGetBuffer(key: string, field: Buffer): Promise<Buffer | null>;
}

export interface RedisOptions {
  /** Reject commands at once while disconnected, instead of queueing them (read path). */
  failFast?: boolean;
  /** Return without waiting for the first connection; the client keeps reconnecting (API start without Redis). */
  background?: boolean;
  /** Give up on the first connection after this long, with an error naming the setting (CLI, worker start). */
  connectWithinMs?: number;
}

function standaloneAdapter(client: StandaloneClient): Redis {
  const binary = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  return Object.assign(client, {
    scanKeys: (pattern: string, count = 1000) => client.scanIterator({ MATCH: pattern, COUNT: count }),
    mGetBuffers: (keys: string[]) => binary.mGet(keys),
    hGetBuffer: async (key: string, field: Buffer) => (await binary.hGet(key, field)) ?? null,
  });
}

function clusterAdapter(cluster: ClusterClient): Redis {
  const binary = cluster.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  async function* scanKeys(pattern: string, count = 1000): AsyncIterable<string[]> {
    for (const master of cluster.masters) {
      const node = await cluster.nodeClient(master);
      yield* node.scanIterator({ MATCH: pattern, COUNT: count });
    }
  }
  followFailovers(cluster);
  return Object.assign(cluster, { scanKeys, mGetBuffers: (keys: string[]) => binary.mGet(keys), hGetBuffer: async (key: string, field: Buffer) => (await binary.hGet(key, field)) ?? null });
}

/**
 * The primary behind Sentinels, as a standalone client of the node they name once its `ROLE` says
 * primary; on errors the Sentinels are asked again, at most every 500 ms. Not createSentinel: it
 * retries each command until a primary answers, so commands the API gave up on run late on the new
 * primary (claims moving offsets for pages never served); here they fail fast.
 */
function sentinelPrimary(target: { sentinels: RedisNode[]; name: string }, access: RedisAccess, sentinelOptions: SentinelOptions, failFast: boolean | undefined): Redis {
  const listeners: Array<(err: Error) => void> = [];
  let address: RedisNode | undefined;
  let current: Redis | undefined;
  let closed = false;
  let generation = 0;
  let holding = false;
  let lastAsked = -Infinity;
  let watcher: ReturnType<typeof watchSentinels> | undefined;
  let fence: (() => Promise<void>) | undefined;
  /** The (re)connections of the connection in use: a write's undo must go over the connection that wrote. */
  let epochOf: (() => number) | undefined;
  const agreement = sentinelsAgree(target.sentinels, target.name, sentinelOptions);
  const drop = () => {
    generation++;
    if (current?.isOpen) current.destroy();
    [address, current, fence, epochOf] = [undefined, undefined, undefined, undefined];
  };
  // Commands go to the new client only once it is connected and is the primary.
  const use = async (next: RedisNode) => {
    drop();
    const mine = generation;
    const raw = createClient({ ...nodeRedisOptions(access, next), disableOfflineQueue: failFast });
    const client = standaloneAdapter(raw);
    let epoch = 0;
    raw.on('connect', () => epoch++);
    const link = { epoch: () => epoch, wait: (ms: number) => raw.sendCommand<number>(['WAIT', '1', String(ms)]), replicas: () => replicaCount(raw), node: () => next };
    for (const listener of listeners) client.on('error', listener);
    client.on('error', () => void follow());
    try {
      await client.connect();
      if (!(await isPrimary(raw))) throw new Error(`${next.host}:${next.port}, named by the Sentinels, is not a primary (ROLE)`);
    } catch (err) {
      if (client.isOpen) client.destroy(); // destroying a closed client throws
      throw err;
    }
    if (mine !== generation || closed || holding) return void (client.isOpen && client.destroy());
    [address, current, fence, epochOf] = [next, client, writeFence(link, agreement), link.epoch];
  };
  const follow = async (now = false) => {
    if (closed || holding || (!now && performance.now() - lastAsked < REDISCOVER_EVERY_MS)) return;
    lastAsked = performance.now();
    const named = await askSentinels(target.sentinels, target.name, sentinelOptions).catch(() => undefined);
    if (named && !closed && (named.host !== address?.host || named.port !== address.port || !current?.isOpen)) await use(named).catch(() => setTimeout(() => void follow(), REDISCOVER_EVERY_MS));
  };
  const heard = (event: SentinelEvent) => {
    holding = event.kind === 'hold';
    if (holding) drop();
    else if (event.kind === 'switch') void use(event.to).catch(() => follow(true));
    else void follow(true);
  };
  const controls = {
    get isOpen() {
      return current?.isOpen ?? !closed;
    },
    async connect() {
      watcher ??= watchSentinels(target.sentinels, target.name, sentinelOptions, heard);
      for (let attempt = 0; !closed; attempt++) {
        try {
          const named = await askSentinels(target.sentinels, target.name, sentinelOptions);
          await watcher.listening; // a failover starting before would go unheard
          return await use(named);
        } catch (err) {
          if (misconfiguration(err as Error, 'REDIS', `${target.name}'s primary`)) throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, reconnectDelay(attempt)));
      }
    },
    on(_event: 'error', listener: (err: Error) => void) {
      listeners.push(listener);
      current?.on('error', listener);
    },
    async close() {
      closed = true;
      watcher?.close();
      agreement.close();
      await current?.close();
    },
    destroy() {
      closed = true;
      watcher?.close();
      agreement.close();
      if (current?.isOpen) current.destroy();
    },
  };
  // While no primary is in use (before the first, during a failover's hold), commands go to a client never connected: they are refused ("The client is closed").
  return new Proxy(standaloneAdapter(createClient({ disableOfflineQueue: true })), {
    get(target, prop) {
      if (prop in controls) return Reflect.get(controls, prop);
      const [client, confirm] = current ? [current, fence] : [target, undefined];
      const value: unknown = Reflect.get(client, prop);
      if (typeof value !== 'function') return value;
      if (!confirm || !WRITES.has(prop)) return value.bind(client);
      // A write answers once the fence confirms it (redis-sentinel.ts); one it cannot confirm sends the client to the Sentinels.
      const epoch = epochOf;
      return async (...args: unknown[]) => {
        const wrote = epoch?.();
        const result: unknown = await value.apply(client, args);
        await confirm().catch((err: unknown) => {
          void follow();
          // The write ran on this node: its reply goes with the error (one per write), for a caller that must undo it there.
          const still = () => current === client && epoch?.() === wrote;
          throw Object.assign(new NotDurableError(err instanceof Error ? err.message : String(err), { cause: err }), { written: { reply: result, still } });
        });
        return result;
      };
    },
  });
}

/** The commands that write (scripts too: a ring claim is one), confirmed by the write fence behind Sentinels. */
const WRITES = new Set<string | symbol>(['set', 'del', 'expire', 'pExpire', 'pExpireAt', 'rename', 'hSet', 'hDel', 'hIncrBy', 'rPush', 'sAdd', 'sRem', 'xAdd', 'evalSha', 'eval']);

/** Least time between two slot-map reads while a node reports errors. */
const REDISCOVER_EVERY_MS = 500;

/**
 * node-redis's cluster client rereads the slot map only on MOVED/ASK (node-redis #2806), which a
 * dead master's slots never answer. While any node reports errors the map is reread from a node
 * that answers, at most every 500 ms, so a promoted replica replaces the dead node (SPEC R22).
 */
function followFailovers(cluster: ClusterClient): void {
  let lastRead = -Infinity;
  cluster.on('node-error', () => {
    if (!cluster.isOpen || performance.now() - lastRead < REDISCOVER_EVERY_MS) return;
    const answering = [...cluster.nodeByAddress.values()].find((node) => node.client?.isReady)?.client;
    if (!answering) return;
    lastRead = performance.now();
    cluster._slots.rediscover(answering).catch(() => undefined);
  });
}

/**
 * Connects (with `background`, starts connecting, at most CONNECT_TIMEOUT_MS to a first answer).
 * Refused credentials, an untrusted certificate or a master name no Sentinel knows throw an error
 * naming the setting, whatever the options: no reconnect cures them.
 */
export async function connectRedis(config: RedisSettings, options: RedisOptions = {}): Promise<Redis> {
  // Timeouts, reconnects and fail-fast: the policy in redis-connection.ts.
  const target = redisTarget(config);
  const access = dataAccess(config);
  const defaults = { ...nodeRedisOptions(access), disableOfflineQueue: options.failFast };
  const redis =
    target.mode === 'cluster'
      ? clusterAdapter(createCluster({ rootNodes: target.nodes.map((node) => ({ socket: node })), defaults }))
      : target.mode === 'sentinel'
        ? sentinelPrimary(target, access, sentinelOptions(config), options.failFast)
        : standaloneAdapter(createClient({ url: target.url, ...defaults }));
  // A Redis outage repeats the same error on every reconnect: one line per distinct message per 30 s.
  redis.on('error', oncePerMessage(30_000, (err) => logger.warn('redis error', { err: err.message })));
  const decided = new Promise<void>((resolve, reject) =>
    redis.on('error', (err) => {
      const wrong = misconfiguration(err, 'REDIS', describeRedisTarget(config));
      if (wrong) reject(wrong);
      else if (options.background) resolve();
    }),
  );
  // A server that wants a password and got none accepts the connection: the first command says NOAUTH.
  const connecting = redis.connect().then(() => redis.exists('connect-check'));
  connecting.catch(() => undefined);
  decided.catch(() => undefined);
  try {
    const connected = options.connectWithinMs === undefined ? connecting : withDeadline(connecting, options.connectWithinMs, 'connecting');
    await Promise.race([connected, decided, ...(options.background ? [delay(CONNECT_TIMEOUT_MS)] : [])]);
    return redis;
  } catch (err) {
    const wrong = misconfiguration(err as Error, 'REDIS', describeRedisTarget(config));
    if (!wrong && options.background) return redis;
    if (redis.isOpen) redis.destroy();
    if (wrong) throw wrong;
    if (options.connectWithinMs === undefined) throw err;
    throw new Error(`Redis unreachable at ${describeRedisTarget(config)}: no connection within ${options.connectWithinMs} ms`);
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Deletes every key under `prefix` (tests, benchmarks), `{prefix…}:staging` too; one key per DEL (a batch spans cluster slots). */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
    for await (const batch of redis.scanKeys(pattern)) await Promise.all(batch.map((key) => redis.del(key)));
  }
}

/** Closes gracefully, or drops the connection when Redis does not answer. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (!redis.isOpen) return;
  try {
    await redis.close();
  } catch {
    redis.destroy();
  }
}
