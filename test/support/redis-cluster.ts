/**
 * A real 3-master Redis Cluster on loopback, from Debian's redis-server, for the cluster tests.
 * Nodes run in the foreground as child processes and are stopped by pid.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface LocalCluster {
  nodes: string[];
  stop(): Promise<void>;
}

async function waitForPing(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'ping']);
      if (stdout.trim() === 'PONG') return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis node on ${port} did not start`);
}

export async function startLocalCluster(basePort: number): Promise<LocalCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-cluster-'));
  const ports = [basePort, basePort + 1, basePort + 2];
  const processes: ChildProcess[] = ports.map((port) =>
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    ),
  );
  const stop = async () => {
    await Promise.all(
      processes.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map(waitForPing));
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    // Wait until every node agrees the cluster is up.
    for (const port of ports) {
      for (let attempt = 0; ; attempt++) {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
        if (stdout.includes('cluster_state:ok')) break;
        if (attempt > 100) throw new Error('cluster did not reach state ok');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes: ports.map((p) => `127.0.0.1:${p}`), stop };
}
