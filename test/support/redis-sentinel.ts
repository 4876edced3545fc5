/**
 * A real primary + replica behind three Redis Sentinels on loopback (Debian's redis-server, run
 * with --sentinel), for the failover tests. Processes run in the foreground and are stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitUntil } from '../../tools/support/processes';
import { redisCli, stopChild } from './redis-cluster';
import type { TestCertificates } from './redis-tls';

export const SENTINEL_MASTER = 'feedmaster';

export interface LocalSentinels {
  /** host:port of the Sentinels (REDIS_SENTINELS). */
  sentinels: string[];
  cli(port: number, ...args: string[]): Promise<string>;
  /** The primary's port as the Sentinels name it. */
  primary(): Promise<number>;
  kill(port: number): Promise<void>;
  /** A killed data node started again as it was configured (the Sentinels turn a former primary into a replica). */
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

/** With `tls`, every node serves TLS only (replication and Sentinel links too); `password`: data nodes' requirepass, also of the ACL user `feed`; `sentinelPassword`: the Sentinels'. */
export interface SentinelSetUp {
  tls?: TestCertificates;
  password?: string;
  sentinelPassword?: string;
}

/** Data nodes on basePort (primary) and basePort+1 (replica), Sentinels on basePort+10..12. */
export async function startLocalSentinels(basePort: number, setUp: SentinelSetUp = {}): Promise<LocalSentinels> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-sentinel-'));
  const [primary, replica] = [basePort, basePort + 1];
  const sentinelPorts = [basePort + 10, basePort + 11, basePort + 12];
  const processes = new Map<number, ChildProcess>();
  const { tls, password, sentinelPassword } = setUp;
  const listen = (port: number) => (tls ? ['--port', '0', '--tls-port', String(port), ...tls.serverArgs, '--tls-replication', 'yes'] : ['--port', String(port)]);
  const auth = password ? ['--requirepass', password, '--masterauth', password, '--user', 'feed', 'on', `>${password}`, '~*', '&*', '+@all'] : [];
  const dataArgs = (port: number) => [...listen(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...auth, ...(port === replica ? ['--replicaof', '127.0.0.1', String(primary)] : [])];
  const start = (port: number) => {
    let args = dataArgs(port);
    if (sentinelPorts.includes(port)) {
      const conf = path.join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        conf,
        [
          ...(tls ? ['port 0', `tls-port ${port}`, ...tls.serverArgs.map((arg, i) => (i % 2 === 0 ? `${arg.slice(2)} ${tls.serverArgs[i + 1]}` : '')).filter(Boolean), 'tls-replication yes'] : [`port ${port}`]),
          ...(sentinelPassword ? [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`] : []),
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 3000`,
          ...(password ? [`sentinel auth-pass ${SENTINEL_MASTER} ${password}`] : []),
          '',
        ].join('\n'),
      );
      args = [conf, '--sentinel'];
    }
    processes.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
  };
  const flags = (port: number) => {
    const secret = sentinelPorts.includes(port) ? sentinelPassword : password;
    return [...(tls ? ['--tls', '--cacert', tls.ca] : []), ...(secret ? ['-a', secret, '--no-auth-warning'] : [])];
  };
  const cli = (port: number, ...args: string[]) => redisCli(port, ...flags(port), ...args);
  const kill = (port: number, signal: NodeJS.Signals = 'SIGKILL') => stopChild(processes.get(port)!, signal);
  const ping = (port: number) => waitUntil(`redis on ${port}`, () => cli(port, 'ping').then((r) => r === 'PONG', () => false), 10_000);
  const stop = async () => {
    await Promise.all([...processes.keys()].map((port) => kill(port, 'SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  };
  const primaryPort = async () => {
    const answers = await Promise.all(sentinelPorts.map((port) => cli(port, 'sentinel', 'get-master-addr-by-name', SENTINEL_MASTER).catch(() => '')));
    return Number(answers.find(Boolean)!.split('\n')[1]);
  };
  try {
    for (const port of [primary, replica]) start(port);
    await Promise.all([primary, replica].map(ping));
    await waitUntil('the replica in sync', async () => (await cli(replica, 'info', 'replication')).includes('master_link_status:up'), 10_000);
    for (const port of sentinelPorts) start(port);
    await Promise.all(sentinelPorts.map(ping));
    // Every Sentinel knows the replica and the other Sentinels before a test kills the primary.
    await waitUntil(
      'the Sentinels aware of each other and of the replica',
      async () => (await Promise.all(sentinelPorts.map((port) => cli(port, 'sentinel', 'master', SENTINEL_MASTER)))).every((info) => /num-slaves\n1\n/.test(info) && /num-other-sentinels\n2\n/.test(info)),
      20_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`),
    cli,
    primary: primaryPort,
    kill: (port: number) => kill(port),
    async restart(port: number) {
      start(port);
      await ping(port);
    },
    stop,
  };
}
