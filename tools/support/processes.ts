/** Local child processes for the benchmarks and the reliability suite: a Redis of their own, the embedded MongoDB, the API, the worker, CLI runs. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

export const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

/**
 * Ports handed to a child process to listen on are chosen below the kernel's ephemeral range
 * (32768-60999 here): between this check and the child's listen, any `listen(0)` or outgoing
 * connection on the machine could otherwise take the same port, and a test would then talk to
 * another process's server (seen beside `pnpm bench api`: an API of the bench answering a test).
 */
/** `CHILD_PORT_RANGE=17100-17199` confines the ports to a range of one's own (a shared machine). */
const [, childPortsFrom = '20000', childPortsTo = '32000'] = /^(\d+)-(\d+)$/.exec(process.env.CHILD_PORT_RANGE ?? '') ?? [];
const CHILD_PORTS = { from: Number(childPortsFrom), to: Number(childPortsTo) };

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port free on 127.0.0.1 now, outside the ephemeral range (see CHILD_PORTS). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = CHILD_PORTS.from + Math.floor(Math.random() * (CHILD_PORTS.to - CHILD_PORTS.from));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${CHILD_PORTS.from}-${CHILD_PORTS.to}`);
}

/** The first of `span` consecutive ports free on 127.0.0.1 now (a Redis Cluster or Sentinel set-up numbered from a base), in CHILD_PORTS. */
export async function freePortBlock(span: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const base = CHILD_PORTS.from + Math.floor(Math.random() * (CHILD_PORTS.to - CHILD_PORTS.from - span));
    const free = await Promise.all(Array.from({ length: span }, (_, i) => canListen(base + i)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${span} free ports in a row in ${CHILD_PORTS.from}-${CHILD_PORTS.to}`);
}

/**
 * A port nothing else can take while it is held: every connection to it is reset, as to a server
 * that is down. A free port left unheld can be taken by a parallel test's server in the meantime.
 */
export async function holdPort(): Promise<{ port: number; release(): Promise<void> }> {
  const server = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** True when something accepts connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** The exit code of a managed process (null when a signal ended it), once it has exited. */
export const exited = (p: Managed) => new Promise<number | null>((resolve) => (p.child.exitCode !== null ? resolve(p.child.exitCode) : p.child.once('exit', (code) => resolve(code))));

/** Polls `probe` until it returns true, at most `timeoutMs`. */
export async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export interface Managed {
  child: ChildProcess;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Children still running: killed when this process exits or is interrupted, so none outlives it. */
const running = new Set<ChildProcess>();

function killRunning(): void {
  for (const child of running) child.kill('SIGKILL');
}

let cleanupInstalled = false;
function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.once('exit', killRunning);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => {
      killRunning();
      process.exit(code);
    });
  }
}

export function startProcess(args: string[], env: Record<string, string>, command = process.execPath, options: { detached?: boolean } = {}): Managed {
  installCleanup();
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const output: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  return {
    child,
    output,
    stop: (signal = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}

/** Node arguments that run a TypeScript file with the workspace packages resolved to their sources. */
export const tsx = (file: string, ...args: string[]) => ['--conditions=@feed/source', '--import', 'tsx', path.join(ROOT, file), ...args];

/** A Redis server of the suite's own (with an append-only file, so a restart keeps data). */
export async function startRedis(port: number, dir: string): Promise<Managed> {
  const redis = startProcess(['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--dir', dir], {}, 'redis-server');
  await waitUntil(`redis on ${port}`, async () => (await run('redis-cli', ['-p', String(port), 'ping'])).stdout.trim() === 'PONG');
  return redis;
}

/** The embedded MongoDB-protocol server (`pnpm cli mongo`) in a child process, once listening; `nodeArgs` go before the script (a bench's `--cpu-prof`). */
export async function startMongoProcess(port: number, nodeArgs: string[] = []): Promise<Managed> {
  const mongo = startProcess([...nodeArgs, ...tsx('tools/cli.ts', 'mongo', '--port', String(port))], {});
  // Its start compiles the CLI with tsx: tens of seconds on a loaded 2-core machine, not 15 s.
  await waitUntil(`embedded mongo on ${port}`, async () => mongo.output.join('').includes('listening'), 60_000);
  return mongo;
}

/** The exit code of `p` once it exits; past `timeoutMs` it is SIGKILLed and this throws naming `what`. */
export async function exitWithin(p: Managed, what: string, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`${what} did not exit within ${timeoutMs / 1000} s: killed`));
      void p.stop('SIGKILL');
    }, timeoutMs);
  });
  try {
    return await Promise.race([exited(p), overdue]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs a CLI command to completion (at most `timeoutMs`, then it is killed); returns exit code and output. */
export async function cli(env: Record<string, string>, ...args: string[]): Promise<{ code: number | null; output: string }> {
  const p = startProcess(tsx('tools/cli.ts', ...args), env);
  const code = await exitWithin(p, `cli ${args[0]}`, CLI_TIMEOUT_MS);
  return { code, output: p.output.join('') };
}

/** The longest a CLI command may run: the 100k-video seed and a build on a loaded 2-core machine take minutes, not ten. */
export const CLI_TIMEOUT_MS = 600_000;
