/**
 * A real Redis Cluster on loopback, from Debian's redis-server, for the cluster tests: 3 masters,
 * optionally each with a replica (the failover tests kill, restart and fail over nodes). Nodes run
 * in the foreground as child processes and are stopped by pid. With `secure`, every node serves TLS
 * only (client, replication and cluster bus) and wants the ACL user's or the default password.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { cliFlags, credentialArgs, type SecureRedis } from './redis-tls';

const run = promisify(execFile);

export interface ClusterOptions {
  /** Replicas per master (default 0): ports basePort+3.. */
  replicas?: number;
  /** cluster-node-timeout: how long before a silent master is failed over (default Redis's 15 s). */
  nodeTimeoutMs?: number;
  /** The cluster bus port is the node's port plus this (default Redis's 10000). */
  busOffset?: number;
  /** TLS and credentials on every node (redis-tls.ts). */
  secure?: SecureRedis;
}

export interface LocalCluster {
  /** host:port of every node (the seeds a client is given). */
  nodes: string[];
  ports: number[];
  /** redis-cli against one node; its output trimmed. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The port of the master that serves `key`'s slot, as a live node sees it. */
  masterOf(key: string): Promise<number>;
  /** SIGKILL of one node (a crashed host). */
  kill(port: number): Promise<void>;
  /** A killed node started again with its nodes.conf: it rejoins (a former master as a replica). */
  restart(port: number): Promise<void>;
  /** Until every running node says cluster_state:ok (right after a kill they still do: wait for the promotion first); resolves with when (performance.now()). */
  untilOk(timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/** redis-cli against the server on `port`; its output trimmed. */
export const redisCli = (port: number, ...args: string[]) => run('redis-cli', ['-p', String(port), ...args]).then((r) => r.stdout.trim());

/** Signals a child process and resolves once it has exited (at once when it already has). */
export const stopChild = (p: ChildProcess, signal: NodeJS.Signals) =>
  new Promise<void>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill(signal);
  });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForPing(port: number, flags: string[] = []): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      if ((await redisCli(port, ...flags, 'ping')) === 'PONG') return;
    } catch {
      // not up yet
    }
    await pause(50);
  }
  throw new Error(`redis node on ${port} did not start`);
}

export async function startLocalCluster(basePort: number, options: ClusterOptions = {}): Promise<LocalCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-cluster-'));
  const ports = Array.from({ length: 3 * (1 + (options.replicas ?? 0)) }, (_, i) => basePort + i);
  const processes = new Map<number, ChildProcess>();
  const { secure } = options;
  const flags = cliFlags(secure?.tls, secure?.password);
  const cli = (port: number, ...args: string[]) => redisCli(port, ...flags, ...args);
  const listen = (port: number) => (secure ? ['--port', '0', '--tls-port', String(port), ...secure.tls.serverArgs, '--tls-cluster', 'yes', '--tls-replication', 'yes', ...credentialArgs(secure.password)] : ['--port', String(port)]);
  const start = (port: number) =>
    processes.set(
      port,
      spawn(
        'redis-server',
        [
          ...listen(port),
          ...['--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--save', '', '--appendonly', 'no', '--dir', dir],
          ...(options.nodeTimeoutMs ? ['--cluster-node-timeout', String(options.nodeTimeoutMs)] : []),
          ...(options.busOffset ? ['--cluster-port', String(port + options.busOffset)] : []),
        ],
        { stdio: 'ignore' },
      ),
    );
  const kill = (port: number, signal: NodeJS.Signals = 'SIGKILL') => stopChild(processes.get(port)!, signal);
  const live = () => ports.filter((port) => processes.get(port)!.exitCode === null && processes.get(port)!.signalCode === null);
  const untilOk = async (timeoutMs = 30_000) => {
    const started = performance.now();
    for (;;) {
      const states = await Promise.all(live().map((port) => cli(port, 'cluster', 'info').catch(() => '')));
      if (states.every((info) => info.includes('cluster_state:ok'))) return performance.now();
      if (performance.now() - started > timeoutMs) throw new Error(`cluster not ok within ${timeoutMs} ms`);
      await pause(50);
    }
  };
  const stop = async () => {
    await Promise.all(ports.map((port) => kill(port, 'SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  };
  for (const port of ports) start(port);
  try {
    await Promise.all(ports.map((port) => waitForPing(port, flags)));
    await run('redis-cli', [...flags, '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(options.replicas ?? 0), '--cluster-yes']);
    await untilOk(10_000);
    // Replicas in sync before any test kills their master.
    for (const port of ports) {
      for (let attempt = 0; (await cli(port, 'info', 'replication')).includes('master_link_status:down'); attempt++) {
        if (attempt > 200) throw new Error(`replica ${port} did not sync`);
        await pause(50);
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes: ports.map((p) => `127.0.0.1:${p}`),
    ports,
    cli,
    async masterOf(key: string) {
      const [any] = live();
      const slot = Number(await cli(any, 'cluster', 'keyslot', key));
      const slots = JSON.parse(await cli(any, '--json', 'cluster', 'slots')) as Array<[number, number, [string, number]]>;
      const range = slots.find(([from, to]) => from <= slot && slot <= to)!;
      return range[2][1];
    },
    kill: (port: number) => kill(port),
    async restart(port: number) {
      start(port);
      await waitForPing(port, flags);
    },
    untilOk,
    stop,
  };
}
