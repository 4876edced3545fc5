/**
 * Following a primary behind Sentinels per Redis's client guidelines: ask them for the primary,
 * check `ROLE` there, listen to their events. A failover's start holds writes until
 * `+switch-master`; an abort, or HOLD_MS, releases the hold. Events heard late cannot lose an
 * acknowledged write: the write fence answers a write only once a replica has it. A name no
 * Sentinel knows is a configuration error, not an outage.
 */
import { createClient, type RedisClientOptions } from 'redis';
import IORedis, { type RedisOptions as IORedisOptions } from 'ioredis';
import { withDeadline } from './deadline';
import { misconfiguration, RedisMisconfigured, type RedisNode } from './redis-connection';

/** node-redis options for a Sentinel (its address, its credentials and TLS, the connection policy). */
export type SentinelOptions = (sentinel: RedisNode) => RedisClientOptions;

/** Longest hold without `+switch-master` (Sentinel's own failover-timeout is usually longer; the hold then resumes on what they name). */
const HOLD_MS = 10_000;

/** Longest wait for a first subscription before connecting anyway. */
const LISTEN_MS = 10_000;

const STARTS = ['+try-failover', '+failover-state-send-slaveof-noone'];
const ABORTS = ['-failover-abort-not-elected', '-failover-abort-no-good-slave', '-failover-abort-slave-timeout', '+failover-end-for-timeout'];

/** A hold names the primary being failed over; a switch, the old and the new primary. */
export type SentinelEvent = { kind: 'hold'; from: RedisNode } | { kind: 'release' } | { kind: 'switch'; from: RedisNode; to: RedisNode };

const label = (nodes: RedisNode[]) => nodes.map((s) => `${s.host}:${s.port}`).join(',');

/** The primary's address as the first Sentinel that answers names it; throws RedisMisconfigured when those that answer all, or a majority, know no such name. */
export async function askSentinels(sentinels: RedisNode[], name: string, options: SentinelOptions): Promise<RedisNode> {
  let denied = 0;
  const failures: string[] = [];
  for (const sentinel of sentinels) {
    const client = createClient({ ...options(sentinel), socket: { ...options(sentinel).socket, reconnectStrategy: false } });
    // A refused AUTH or certificate is an 'error' event: connect() then waits on, or fails as "The client is closed".
    let emitted: Error | undefined;
    const failed = new Promise<never>((_, reject) => client.on('error', (err: Error) => reject((emitted ??= err))));
    try {
      await Promise.race([client.connect(), failed]);
      const reply = await Promise.race([client.sendCommand<[string, string] | null>(['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]), failed]);
      if (reply) return { host: reply[0], port: Number(reply[1]) };
      denied++;
    } catch (err) {
      const wrong = misconfiguration(emitted ?? (err as Error), 'REDIS_SENTINEL', `the Sentinel ${sentinel.host}:${sentinel.port}`);
      if (wrong) throw wrong;
      failures.push((err as Error).message);
    } finally {
      if (client.isOpen) client.destroy(); // destroying a closed client throws
    }
  }
  // A majority that knows no such name (one Sentinel down for maintenance does not hide a wrong name).
  if (denied > sentinels.length / 2 || (denied > 0 && failures.length === 0)) throw new RedisMisconfigured(`REDIS_SENTINEL_MASTER=${name}: the Sentinels ${label(sentinels)} know no primary of that name`);
  throw Object.assign(new Error(`no Sentinel of ${label(sentinels)} names a primary ${name}: ${failures.at(-1) ?? 'none answered'}`), { failures });
}

/** True when the node at `client` says it is a primary (ROLE). */
export async function isPrimary(client: { sendCommand<T>(args: string[]): Promise<T> }): Promise<boolean> {
  return (await client.sendCommand<[string, ...unknown[]]>(['ROLE']))[0] === 'master';
}

/** Subscribes to every Sentinel's failover events for `name` (node-redis resubscribes after a reconnect). */
export function watchSentinels(sentinels: RedisNode[], name: string, options: SentinelOptions, on: (event: SentinelEvent) => void): { listening: Promise<void>; close(): void } {
  let holdTimer: NodeJS.Timeout | undefined;
  const release = (event: SentinelEvent) => {
    if (holdTimer === undefined && event.kind === 'release') return;
    clearTimeout(holdTimer);
    holdTimer = undefined;
    on(event);
  };
  const heard = (message: string, channel: string) => {
    const words = message.split(' ');
    if (channel === '+switch-master') {
      if (words[0] === name) release({ kind: 'switch', from: { host: words[1], port: Number(words[2]) }, to: { host: words[3], port: Number(words[4]) } });
      return;
    }
    // "master <name> <ip> <port>", or "slave <ip:port> <ip> <port> @ <name> <ip> <port>".
    const [master, host, port] = words[0] === 'master' ? words.slice(1) : words.slice(words.indexOf('@') + 1);
    if (master !== name) return;
    if (ABORTS.includes(channel)) return release({ kind: 'release' });
    if (holdTimer !== undefined) return;
    holdTimer = setTimeout(() => release({ kind: 'release' }), HOLD_MS);
    on({ kind: 'hold', from: { host, port: Number(port) } });
  };
  const clients = sentinels.map((sentinel) => createClient(options(sentinel)).on('error', () => undefined));
  const subscribed = clients.map((client) => client.connect().then(() => client.subscribe([...STARTS, ...ABORTS, '+switch-master'], heard)));
  // Listening once one Sentinel is subscribed (TLS + AUTH took over 2 s on a loaded host), or after
  // LISTEN_MS (an ACL user without +subscribe: failovers then show only as connection errors).
  const listening = Promise.race([Promise.any(subscribed), new Promise((resolve) => setTimeout(resolve, LISTEN_MS).unref())]).then(() => undefined, () => undefined);
  return {
    listening,
    close() {
      clearTimeout(holdTimer);
      for (const client of clients) if (client.isOpen) client.destroy();
    },
  };
}

const key = (node: RedisNode) => `${node.host}:${node.port}`;

/** Longest wait for a replica to confirm writes (WAIT) before they count as not durable. */
const FENCE_MS = 500;
/** How long a round of the fence's questions may be out before the next starts beside it. */
const OVERLAP_AFTER_MS = 100;
/** Longest wait for a Sentinel's answer to the fence's question (one that does not answer in time does not count). */
const ANSWER_MS = 2_000;
/**
 * A write the fence could not confirm (a failover may discard it). It did run: `written` holds its
 * reply, and `still()` says whether the client still uses the connection that wrote, so a caller
 * can undo it on the same node (a ring claim never served), kept or discarded with it.
 */
export class NotDurableError extends Error {
  written?: { reply: unknown; still(): boolean };
}

/** The connection that wrote, seen by the fence: its number of (re)connections, WAIT on it, its replicas (ROLE), its node. */
export interface ReplicaLink {
  epoch(): number;
  wait(ms: number): Promise<number>;
  replicas(): Promise<number>;
  node(): RedisNode | undefined;
}

/**
 * Whether every Sentinel answers, names `node` and none is failing it over (until the switch only
 * the leader knows: a majority is not enough). Each question waits for a round that starts after it
 * (a cached yes let the old primary acknowledge writes after its replica's promotion); questions
 * share the next round, which starts when the out one ends or `overlapAfterMs` after them.
 */
export function agreementRounds(askAll: () => Promise<string[]>, sentinels: number, overlapAfterMs = OVERLAP_AFTER_MS): (node: string) => Promise<boolean> {
  let asking: Promise<unknown> = Promise.resolve();
  let next: Promise<string[]> | undefined;
  return async (node) => {
    next ??= new Promise<void>((start) => {
      // The next round starts when the one out ends, or overlapAfterMs after this question if it is slow (a slow Sentinel).
      const timer = setTimeout(start, overlapAfterMs).unref();
      void asking.catch(() => undefined).then(() => (clearTimeout(timer), start()));
    }).then(() => ((next = undefined), (asking = askAll())));
    const answers = await next;
    return answers.length === sentinels && answers.every((answer) => answer === node);
  };
}

/** `agreementRounds` over connections to the Sentinels kept open. */
export function sentinelsAgree(sentinels: RedisNode[], name: string, options: SentinelOptions) {
  const clients = sentinels.map((sentinel) => createClient({ ...options(sentinel), disableOfflineQueue: true }).on('error', () => undefined));
  const ask = async (client: (typeof clients)[number]) => {
    if (!client.isOpen) await client.connect();
    const reply = await client.sendCommand<string[]>(['SENTINEL', 'MASTER', name]);
    const field = (k: string) => reply[reply.indexOf(k) + 1];
    return field('flags').includes('failover_in_progress') ? 'failing over' : `${field('ip')}:${field('port')}`;
  };
  const askAll = async () =>
    (await Promise.allSettled(clients.map((client) => withDeadline(ask(client), ANSWER_MS, 'Sentinel answer'))))
      .flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
  const agree = agreementRounds(askAll, sentinels.length);
  return {
    agree: (node: RedisNode) => agree(key(node)),
    close() {
      for (const client of clients) if (client.isOpen) client.destroy();
    },
  };
}

/**
 * The write fence (issue 51): a write is acknowledged only once a replica has it (WAIT 1), however
 * late the Sentinels are heard; on a demoted primary WAIT counts none and the write fails. A
 * primary with no replica (a new one, ~8 s) is trusted while the Sentinels agree. Writes of one
 * event-loop turn share one WAIT; a write whose connection was replaced since is not confirmed.
 */
export function writeFence(link: ReplicaLink, sentinels: Pick<ReturnType<typeof sentinelsAgree>, 'agree'>): () => Promise<void> {
  let attached = true;
  let next: Promise<void> | undefined;
  const check = async () => {
    if (attached || (attached = (await link.replicas()) > 0)) {
      if ((await link.wait(FENCE_MS)) >= 1) return;
      if ((attached = (await link.replicas()) > 0)) throw new NotDurableError(`no replica confirmed the write within ${FENCE_MS} ms`);
    }
    const node = link.node();
    if (!node || !(await sentinels.agree(node))) throw new NotDurableError(`the write reached a primary without a replica that the Sentinels do not all name (a failover)`);
  };
  return async () => {
    const epoch = link.epoch();
    await (next ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => ((next = undefined), check())));
    if (link.epoch() !== epoch) throw new NotDurableError('the connection that wrote was replaced before a replica confirmed the write');
  };
}

/** Replicas attached to the primary a client is connected to, by its ROLE. */
export const replicaCount = async (client: { sendCommand<T>(args: string[]): Promise<T> }) => (await client.sendCommand<[string, number, unknown[]]>(['ROLE']))[2]?.length ?? 0;

/**
 * BullMQ's connections behind Sentinels: ioredis's `failoverDetector` plus the hold it lacks. On a
 * failover's start every connection drops and natMap refuses the old primary until the switch
 * (ioredis retries, BullMQ's commands wait offline); after it, a stale Sentinel's answer is mapped.
 */
export function sentinelBullConnection(target: { sentinels: RedisNode[]; name: string }, options: IORedisOptions, sentinelOptions: SentinelOptions): () => IORedis {
  const made = new Set<IORedis>();
  let held: string | undefined;
  const moved = new Map<string, RedisNode>();
  let watcher: ReturnType<typeof watchSentinels> | undefined;
  let agreement: ReturnType<typeof sentinelsAgree> | undefined;
  let listening = false;
  const natMap = (address: string) => {
    // No primary before the watch listens: a failover starting meanwhile would go unheard (ioredis retries the Sentinels).
    if (!listening) throw new Error(`not yet subscribed to the Sentinels' events for ${target.name}`);
    if (address === held) throw new Error(`Sentinel failover of ${target.name} in progress: waiting for +switch-master`);
    const to = moved.get(address);
    return to ? { ...to } : null;
  };
  const follow = (event: SentinelEvent) => {
    held = event.kind === 'hold' ? key(event.from) : undefined;
    if (event.kind === 'hold') for (const connection of made) if (connection.status === 'ready') connection.disconnect(true);
    if (event.kind === 'switch') {
      const [from, to] = [key(event.from), { ...event.to }];
      moved.set(from, to);
      moved.delete(key(event.to));
      // Every Sentinel names the new primary within seconds (their hello messages); then the map is dropped.
      setTimeout(() => moved.get(from) === to && moved.delete(from), HOLD_MS).unref();
    }
  };
  // duplicate() (BullMQ's blocking connection) is made here too: its own node for its fence, followed.
  const make = (override: Partial<IORedisOptions> = {}): IORedis => {
    if (!watcher) {
      agreement = sentinelsAgree(target.sentinels, target.name, sentinelOptions);
      watcher = watchSentinels(target.sentinels, target.name, sentinelOptions, follow);
      void watcher.listening.then(() => (listening = true));
    }
    let node: RedisNode | undefined;
    const connection = new IORedis({
      ...options, ...override, sentinels: target.sentinels, name: target.name, failoverDetector: true,
      natMap: (address: string) => {
        const mapped = natMap(address);
        node = mapped ?? { host: address.slice(0, address.lastIndexOf(':')), port: Number(address.slice(address.lastIndexOf(':') + 1)) };
        return mapped;
      },
    });
    made.add(connection);
    connection.duplicate = (more?: Partial<IORedisOptions>) => make({ ...override, ...more });
    fenceBull(connection, () => node, agreement!);
    // ioredis keeps a lost connection's failoverDetector subscribed; a +switch-master during the
    // reconnect would end it for good (BullMQ silent after a SIGKILLed primary).
    connection.on('close', () => {
      const detector: { cleanup(): void } | null | undefined = Reflect.get(Reflect.get(connection, 'connector') as object, 'failoverDetector');
      detector?.cleanup();
    });
    connection.once('end', () => {
      made.delete(connection);
      if (made.size > 0) return;
      watcher?.close();
      agreement?.close();
      [watcher, agreement, listening] = [undefined, undefined, false];
    });
    return connection;
  };
  return () => make();
}

/** BullMQ's state changes (its Lua scripts, MULTI/EXEC): answered to BullMQ only once the write fence confirms them. */
const FENCED_BULL = new Set(['evalsha', 'eval', 'exec', 'fcall']);

function fenceBull(connection: IORedis, node: () => RedisNode | undefined, sentinels: ReturnType<typeof sentinelsAgree>): void {
  let epoch = 0;
  connection.on('connect', () => epoch++);
  const fence = writeFence(
    {
      epoch: () => epoch,
      wait: async (ms) => Number(await connection.call('WAIT', 1, ms)),
      replicas: async () => ((await connection.call('ROLE')) as [string, number, unknown[]])[2]?.length ?? 0,
      node,
    },
    sentinels,
  );
  const send = connection.sendCommand.bind(connection);
  connection.sendCommand = (command, stream) => {
    if (FENCED_BULL.has(command.name.toLowerCase()) && !command.inTransaction) {
      const resolve = command.resolve;
      command.resolve = (value) => void fence().then(() => resolve(value), (err: Error) => command.reject(err));
    }
    return send(command, stream);
  };
}
