/**
 * Runs the Lua scripts under `lua/` with EVALSHA, falling back to EVAL on NOSCRIPT (the cache is
 * empty after a restart or failover). `--- @include "<name>"` is replaced by
 * `lua/includes/<name>.lua` at load time, as BullMQ shares fragments.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Redis } from './redis-client';

/** Compiled, the scripts sit in `dist/lua`; from sources they are read from the repository's `lua/`. */
export const LUA_DIR = [path.join(__dirname, 'lua'), path.resolve(__dirname, '../../../lua')].find((dir) => existsSync(dir))!;

export type ScriptName = 'ring-claim' | 'ring-unclaim' | 'redis-time' | 'release-lock' | 'extend-lock' | 'record-fingerprint' | 'remove-fingerprint' | 'publish-version' | 'switch-current' | 'rollout-commit' | 'held-record' | 'readout-admit' | 'guest-record';

interface LoadedScript {
  source: string;
  sha: string;
}

const loaded = new Map<ScriptName, LoadedScript>();

export function loadScript(name: ScriptName): LoadedScript {
  let script = loaded.get(name);
  if (!script) {
    const read = (file: string) => readFileSync(path.join(LUA_DIR, file), 'utf8');
    const source = read(`${name}.lua`).replace(/^--- @include "([\w-]+)"$/gm, (_, include: string) => read(`includes/${include}.lua`));
    script = { source, sha: createHash('sha1').update(source).digest('hex') };
    loaded.set(name, script);
  }
  return script;
}

type Arg = string | Buffer;

/** `oneCommand`: EVAL at once in the caller's turn (a give-back: NOSCRIPT then EVAL could reach another primary). */
export async function runScript<T = unknown>(redis: Redis, name: ScriptName, keys: string[], args: Arg[], oneCommand = false): Promise<T> {
  const script = loadScript(name);
  const options = { keys, arguments: args as string[] };
  if (oneCommand) return (await redis.eval(script.source, options)) as T;
  try {
    return (await redis.evalSha(script.sha, options)) as T;
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return (await redis.eval(script.source, options)) as T;
  }
}
