/**
 * Following a primary behind Sentinels as Redis's Sentinel client guidelines say: ask the Sentinels
 * for the primary, check `ROLE` on the node they name, and listen to their events. A failover's
 * start (`+try-failover`, `+failover-state-send-slaveof-noone`, published before the replica is
 * promoted) holds writes: from then until `+switch-master` names the new primary no command
 * reaches the old one, whose writes the demotion would discard (issue 51: a planned failover lost
 * ~10 s of them). An aborted failover, or none finished within HOLD_MS, releases the hold.
 * A name no Sentinel knows is a configuration error, not an outage.
 */
import { createClient, type RedisClientOptions } from 'redis';
import IORedis, { type RedisOptions as IORedisOptions } from 'ioredis';
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

/** The primary's address as the first Sentinel that answers names it; throws RedisMisconfigured when those that answer all know no such name. */
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
  if (denied > 0 && failures.length === 0) throw new RedisMisconfigured(`REDIS_SENTINEL_MASTER=${name}: the Sentinels ${label(sentinels)} know no primary of that name`);
  throw Object.assign(new Error(`no Sentinel of ${label(sentinels)} names a primary ${name}: ${failures.at(-1) ?? 'none answered'}`), { failures });
}

/** True when the node at `client` says it is a primary (ROLE). */
export async function isPrimary(client: { sendCommand<T>(args: string[]): Promise<T> }): Promise<boolean> {
  const role = await client.sendCommand<[string, ...unknown[]]>(['ROLE']);
  return role[0] === 'master';
}

/**
 * Subscribes to every Sentinel's failover events for `name`; `on` hears hold, switch and release.
 * node-redis resubscribes after a reconnect, so a Sentinel restarted is heard again.
 */
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
  // Listening once one Sentinel is subscribed (a TLS handshake and AUTH on a loaded host took over 2 s), or after
  // LISTEN_MS without (an ACL user without +subscribe: then failovers are followed only as connection errors).
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

/**
 * BullMQ's connections to a primary behind Sentinels: ioredis with its `failoverDetector` (it
 * reconnects on `+switch-master`), plus the hold above, which ioredis lacks. On a failover's start
 * every connection is dropped and, until the switch, the old primary's address is refused to
 * ioredis (its natMap throws: it retries the Sentinels under its backoff) while BullMQ's commands
 * wait in its offline queue; after the switch a Sentinel that still names the old primary is
 * mapped to the new one.
 */
export function sentinelBullConnection(target: { sentinels: RedisNode[]; name: string }, options: IORedisOptions, sentinelOptions: SentinelOptions): () => IORedis {
  const made = new Set<IORedis>();
  let held: string | undefined;
  const moved = new Map<string, RedisNode>();
  let watcher: ReturnType<typeof watchSentinels> | undefined;
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
  return () => {
    if (!watcher) {
      watcher = watchSentinels(target.sentinels, target.name, sentinelOptions, follow);
      void watcher.listening.then(() => (listening = true));
    }
    const connection = new IORedis({ ...options, sentinels: target.sentinels, name: target.name, failoverDetector: true, natMap });
    made.add(connection);
    // ioredis keeps a lost connection's failoverDetector subscribed; its +switch-master during the reconnect
    // would abort it for good ("Connection is closed", status end: BullMQ silent after a SIGKILLed primary).
    connection.on('close', () => {
      const detector: { cleanup(): void } | null | undefined = Reflect.get(Reflect.get(connection, 'connector') as object, 'failoverDetector');
      detector?.cleanup();
    });
    connection.once('end', () => {
      made.delete(connection);
      if (made.size > 0) return;
      watcher?.close();
      [watcher, listening] = [undefined, false];
    });
    return connection;
  };
}
