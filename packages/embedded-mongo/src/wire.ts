/**
 * MongoDB wire-protocol framing: the two request kinds the official driver sends
 * (OP_QUERY for the first handshake, OP_MSG for everything after) and their replies.
 * https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
 */
import { DBRef, deserialize, serialize, type Document } from 'bson';

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_MSG = 2013;

const HEADER_BYTES = 16;
const MSG_CHECKSUM_PRESENT = 1 << 0;
/** The client expects no reply (w:0 writes such as endSessions). */
export const MSG_MORE_TO_COME = 1 << 1;

/** Values the server must see as the driver sent them: int64 cursor ids stay numbers when safe. */
const DESERIALIZE_OPTIONS = { promoteLongs: true, promoteValues: true } as const;

export interface Request {
  requestId: number;
  opCode: number;
  /** The command document, with OP_MSG kind-1 document sequences merged in. */
  command: Document;
  /** The database the command addresses. */
  db: string;
  moreToCome: boolean;
}

/** Splits complete messages off the front of `buffer`; returns them and the unconsumed rest. */
export function takeMessages(buffer: Buffer): { messages: Buffer[]; rest: Buffer } {
  const messages: Buffer[] = [];
  let offset = 0;
  while (buffer.length - offset >= 4) {
    const length = buffer.readInt32LE(offset);
    if (length < HEADER_BYTES) throw new Error(`invalid message length ${length}`);
    if (buffer.length - offset < length) break;
    messages.push(buffer.subarray(offset, offset + length));
    offset += length;
  }
  return { messages, rest: buffer.subarray(offset) };
}

export function parseRequest(message: Buffer): Request {
  const requestId = message.readInt32LE(4);
  const opCode = message.readInt32LE(12);
  if (opCode === OP_QUERY) return parseOpQuery(message, requestId);
  if (opCode === OP_MSG) return parseOpMsg(message, requestId);
  throw new Error(`unsupported opCode ${opCode}`);
}

function readCString(buffer: Buffer, offset: number): { value: string; next: number } {
  const end = buffer.indexOf(0, offset);
  return { value: buffer.toString('utf8', offset, end), next: end + 1 };
}

const DBREF_KEY = Buffer.from('$ref\0', 'latin1');

/**
 * BSON deserialises `{ $ref, $id }` into DBRef objects; stored like that, queries on `field.$id`
 * or `field.$ref` would not see them. Messages that hold a `$ref` key get them back as plain
 * documents, the shape MongoDB stores and matches.
 */
function plainDbRefs(value: unknown): unknown {
  if (value instanceof DBRef) {
    return { $ref: value.collection, $id: plainDbRefs(value.oid), ...(value.db ? { $db: value.db } : {}), ...(value.fields as Document) };
  }
  if (Array.isArray(value)) return value.map(plainDbRefs);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [key, inner] of Object.entries(value as Document)) (value as Document)[key] = plainDbRefs(inner);
  }
  return value;
}

function parseOpQuery(message: Buffer, requestId: number): Request {
  let offset = HEADER_BYTES + 4; // flags
  const ns = readCString(message, offset);
  offset = ns.next + 8; // numberToSkip, numberToReturn
  const size = message.readInt32LE(offset);
  const query = deserialize(message.subarray(offset, offset + size), DESERIALIZE_OPTIONS);
  // Legacy clients may wrap the command as { $query: {...} }.
  const command = (query.$query as Document | undefined) ?? query;
  return { requestId, opCode: OP_QUERY, command, db: ns.value.split('.')[0], moreToCome: false };
}

function parseOpMsg(message: Buffer, requestId: number): Request {
  const flags = message.readUInt32LE(HEADER_BYTES);
  const end = message.length - (flags & MSG_CHECKSUM_PRESENT ? 4 : 0);
  let offset = HEADER_BYTES + 4;
  let body: Document | undefined;
  const sequences: Record<string, Document[]> = {};
  while (offset < end) {
    const kind = message.readUInt8(offset);
    offset += 1;
    const size = message.readInt32LE(offset);
    if (kind === 0) {
      body = deserialize(message.subarray(offset, offset + size), DESERIALIZE_OPTIONS);
    } else {
      const sectionEnd = offset + size;
      const id = readCString(message, offset + 4);
      let docOffset = id.next;
      const docs: Document[] = [];
      while (docOffset < sectionEnd) {
        const docSize = message.readInt32LE(docOffset);
        docs.push(deserialize(message.subarray(docOffset, docOffset + docSize), DESERIALIZE_OPTIONS));
        docOffset += docSize;
      }
      sequences[id.value] = docs;
    }
    offset += size;
  }
  if (!body) throw new Error('OP_MSG without a body section');
  Object.assign(body, sequences);
  if (message.includes(DBREF_KEY)) plainDbRefs(body);
  return {
    requestId,
    opCode: OP_MSG,
    command: body,
    db: String(body.$db ?? 'admin'),
    moreToCome: (flags & MSG_MORE_TO_COME) !== 0,
  };
}

let nextResponseId = 1;

function header(length: number, responseTo: number, opCode: number): Buffer {
  const head = Buffer.alloc(HEADER_BYTES);
  head.writeInt32LE(length, 0);
  head.writeInt32LE(nextResponseId++ & 0x7fffffff, 4);
  head.writeInt32LE(responseTo, 8);
  head.writeInt32LE(opCode, 12);
  return head;
}

/** The reply in the same protocol as the request. */
export function encodeReply(request: Request, reply: Document): Buffer {
  const doc = serialize(reply);
  if (request.opCode === OP_QUERY) {
    const fields = Buffer.alloc(20); // responseFlags, cursorID (int64), startingFrom, numberReturned
    fields.writeInt32LE(1, 16);
    return Buffer.concat([header(HEADER_BYTES + 20 + doc.length, request.requestId, OP_REPLY), fields, doc]);
  }
  const flagsAndKind = Buffer.alloc(5); // flagBits = 0, section kind 0
  return Buffer.concat([header(HEADER_BYTES + 5 + doc.length, request.requestId, OP_MSG), flagsAndKind, doc]);
}
