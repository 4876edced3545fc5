import type { Document } from 'bson';

/** A command failure answered as MongoDB does: `{ ok: 0, errmsg, code, codeName }`. */
export class CommandError extends Error {
  constructor(
    readonly code: number,
    readonly codeName: string,
    message: string,
    readonly extra: Document = {},
  ) {
    super(message);
  }

  toReply(): Document {
    return { ok: 0, errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra };
  }

  /** The shape of one entry of a write command's `writeErrors`. */
  toWriteError(index: number): Document {
    return { index, code: this.code, errmsg: this.message, ...this.extra };
  }
}

function describeKey(keyValue: Document): string {
  const parts = Object.entries(keyValue).map(([k, v]) => `${k}: ${JSON.stringify(v instanceof Object && 'toHexString' in v ? `ObjectId('${(v as { toHexString(): string }).toHexString()}')` : v)}`);
  return `{ ${parts.join(', ')} }`;
}

/** E11000 shaped exactly like MongoDB's, so mongoose raises its usual duplicate-key error. */
export function duplicateKeyError(ns: string, indexName: string, keyPattern: Document, keyValue: Document): CommandError {
  return new CommandError(
    11000,
    'DuplicateKey',
    `E11000 duplicate key error collection: ${ns} index: ${indexName} dup key: ${describeKey(keyValue)}`,
    { keyPattern, keyValue },
  );
}
