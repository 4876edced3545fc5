/**
 * MongoDB's `failCommand` fail point, answered as a mongod started with test commands enabled
 * answers `configureFailPoint`: so a test can make this server refuse, stall or drop commands the
 * way an election or a network fault does, and run unchanged against a real server.
 * Modes `alwaysOn`, `off`, `{times: n}`, `{skip: n}`; data `failCommands`, `errorCode`,
 * `errorLabels`, `closeConnection`, `blockConnection`/`blockTimeMS`, `appName`.
 * https://github.com/mongodb/mongo/wiki/The-%22failCommand%22-fail-point
 */
import type { Document } from 'bson';
import { CommandError } from './errors';

/** Names of the codes an election or a shutdown answers with, for the reply's codeName. */
const CODE_NAMES: Record<number, string> = {
  6: 'HostUnreachable',
  89: 'NetworkTimeout',
  91: 'ShutdownInProgress',
  189: 'PrimarySteppedDown',
  9001: 'SocketException',
  10107: 'NotWritablePrimary',
  11600: 'InterruptedAtShutdown',
  11602: 'InterruptedDueToReplStateChange',
  13435: 'NotPrimaryNoSecondaryOk',
  13436: 'NotPrimaryOrSecondary',
};

/** What the fail point does to one command: close its connection, wait, then fail it or run it. */
export interface FailAction {
  close: boolean;
  blockMs: number;
  error?: Document;
}

export class FailCommandPoint {
  private data: Document = {};
  /** Remaining activations (Infinity: alwaysOn, 0: off) and matches to let through first. */
  private remaining = 0;
  private skip = 0;
  private hits = 0;

  /** The `configureFailPoint` command. */
  configure(command: Document, db: string): Document {
    if (db !== 'admin') throw new CommandError(13, 'Unauthorized', 'configureFailPoint may only be run against the admin database.');
    if (command.configureFailPoint !== 'failCommand') throw new CommandError(2, 'BadValue', `Unknown fail point: ${String(command.configureFailPoint)}`);
    const mode = command.mode as unknown;
    const count = this.hits;
    if (mode === 'off') this.remaining = 0;
    else if (mode === 'alwaysOn') this.remaining = Infinity;
    else if (mode && typeof mode === 'object' && ('times' in mode || 'skip' in mode)) {
      const { times, skip } = mode as { times?: number; skip?: number };
      this.remaining = times === undefined ? Infinity : Number(times);
      this.skip = Number(skip ?? 0);
    } else throw new CommandError(2, 'BadValue', `unsupported fail point mode ${JSON.stringify(mode)}`);
    if (mode !== 'off') {
      const data = (command.data as Document | undefined) ?? {};
      if (!Array.isArray(data.failCommands)) throw new CommandError(2, 'BadValue', "failCommand needs 'failCommands' (an array of command names)");
      this.data = data;
      if (typeof mode === 'string') this.skip = 0;
    }
    this.hits = 0;
    return { count, ok: 1 };
  }

  /** The action for `name` sent by a client named `appName`, counting the activation; undefined: run it as usual. */
  take(name: string, appName: string | undefined): FailAction | undefined {
    if (this.remaining <= 0 || !(this.data.failCommands as string[]).includes(name)) return undefined;
    if (this.data.appName !== undefined && this.data.appName !== appName) return undefined;
    if (this.skip > 0) {
      this.skip -= 1;
      return undefined;
    }
    this.remaining -= 1;
    this.hits += 1;
    const { errorCode, errorLabels, closeConnection, blockConnection, blockTimeMS } = this.data;
    const code = errorCode === undefined ? undefined : Number(errorCode);
    const error =
      code === undefined
        ? undefined
        : { ok: 0, code, codeName: CODE_NAMES[code] ?? 'UnknownError', errmsg: `Failing command ${name} via 'failCommand' failpoint`, ...(errorLabels ? { errorLabels } : {}) };
    return { close: Boolean(closeConnection), blockMs: blockConnection ? Number(blockTimeMS ?? 0) : 0, error };
  }
}
