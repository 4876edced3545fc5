/**
 * One error shape for both deployables: expected failures are `AppError`s, each app ends in
 * `errorHandler`, clients get `{ error: { code, message } }`, never a stack; a store down is 503.
 */
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { logger } from '@feed/logger';

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Operational errors are expected (bad input, missing video, a store down); others are bugs. */
    readonly isOperational = true,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new AppError(400, 'bad_request', message);
export const unauthorized = (message = 'a valid bearer token is required') => new AppError(401, 'unauthorized', message);
export const notFound = (message: string) => new AppError(404, 'not_found', message);
export const unavailable = (message: string) => new AppError(503, 'unavailable', message);
export const unsupportedMediaType = (message: string) => new AppError(415, 'unsupported_media_type', message);

export const notFoundRoute: RequestHandler = (req, _res, next) => next(notFound(`no route ${req.method} ${req.path}`));

/** Seconds a 503 asks the client to wait before its retry (a replica-set election lasts about 12 s). */
const RETRY_AFTER_S = '2';

/** Writes `error` as the one error body; a 503 says when to retry (RFC 9110 Retry-After). */
export function sendError(res: Response, error: AppError): void {
  // A store unavailable for a moment (an election, the request's budget spent): the client retries (R17).
  if (error.status === 503) res.setHeader('Retry-After', RETRY_AFTER_S);
  res.status(error.status).json({ error: { code: error.code, message: error.message } });
}

/** Errors of the MongoDB driver, mongoose, node-redis and ioredis that mean "the store is not answering". */
const STORE_DOWN_NAMES = new Set([
  'MongoServerSelectionError',
  'MongooseServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  // A MongoDB wait cut at the request's budget (MONGO_DEADLINE_MS): the race, or the driver's AbortSignal.
  'DeadlineExceededError',
  'MongoOperationTimeoutError',
  'MongoWaitQueueTimeoutError',
  'TimeoutError',
  'ClientClosedError',
  'ClientOfflineError',
  'ConnectionTimeoutError',
  'SocketClosedUnexpectedlyError',
  'MaxRetriesPerRequestError',
  // A write behind Sentinels that no replica confirmed (a failover under way): @feed/storage's write fence.
  'NotDurableError',
  // A Redis wait cut at the request's deadline (REDIS_DEADLINE_MS), or not made once it was spent: @feed/storage's Deadline.
  'RedisCallError',
  'DeadlineSpentError',
]);
const STORE_DOWN_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH']);
/** Redis's replies of a failover or a restart in progress: a demoted primary, data loading, no primary, slots moving. */
const REDIS_FAILING_OVER = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOREPLICAS) /;
/** MongoDB's primary-stepping-down and election answers (NotWritablePrimary ... PrimarySteppedDown): not now. */
const STEPPED_DOWN_CODES = new Set([10107, 13435, 13436, 11602, 11600, 91, 189]);

export function isStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code } = err as { code?: unknown };
  return (
    STORE_DOWN_NAMES.has(err.name) ||
    STORE_DOWN_NAMES.has(err.constructor.name) ||
    (typeof code === 'string' && STORE_DOWN_CODES.has(code)) ||
    (typeof code === 'number' && STEPPED_DOWN_CODES.has(code)) ||
    REDIS_FAILING_OVER.test(err.message) ||
    /buffering timed out|Connection is closed|client is closed/i.test(err.message)
  );
}

interface HttpishError {
  status?: number;
  type?: string;
}

/** The answer to `err`, and whether it is unexpected (a bug: neither ours, nor bad input, nor a store down). */
function toAppError(err: unknown, unexpected: 'internal' | 'unavailable'): { error: AppError; bug: boolean } {
  if (err instanceof AppError) return { error: err, bug: !err.isOperational };
  const { status, type } = (err ?? {}) as HttpishError;
  if (type === 'entity.parse.failed') return { error: badRequest('request body is not valid JSON'), bug: false };
  if (type === 'entity.too.large') return { error: new AppError(413, 'payload_too_large', 'request body is too large'), bug: false };
  // body-parser's 415: a JSON body in a charset or encoding it does not read.
  if (status === 415) return { error: unsupportedMediaType(String((err as Error).message)), bug: false };
  if (status !== undefined && status >= 400 && status < 500) return { error: new AppError(status, 'bad_request', String((err as Error).message)), bug: false };
  if (isStoreUnavailable(err)) return { error: unavailable(`a store this request needs is unavailable (${(err as Error).message}); try again shortly`), bug: false };
  const error = unexpected === 'unavailable' ? unavailable('a store this page needs is unavailable; try again shortly') : new AppError(500, 'internal', 'internal server error', false);
  return { error, bug: true };
}

/** An error as log fields: message and stack, whatever was thrown (a string has no stack of its own). */
export function errorFields(err: unknown): { message: string; name: string; stack: string } {
  if (err instanceof Error) return { message: err.message, name: err.name, stack: err.stack ?? `${err.name}: ${err.message}` };
  const message = typeof err === 'string' ? err : JSON.stringify(err) ?? String(err);
  return { message, name: typeof err, stack: `thrown ${typeof err}: ${message} (no stack: not an Error)` };
}

/**
 * The app's last middleware: an error neither ours nor a store's is `unexpected` (default 500), always
 * logged with its stack; a rejection (4xx, a store's 503) is logged unless `quiet(res)` (a request of
 * the API's start warm-up, whose answers are counted by status in one line).
 */
export function errorHandler(options: { unexpected?: 'internal' | 'unavailable'; quiet?: (res: Parameters<ErrorRequestHandler>[2]) => boolean } = {}): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const { error, bug } = toAppError(err, options.unexpected ?? 'internal');
    const requestId = res.locals.requestId as string | undefined;
    if (bug) logger.error('request failed', { requestId, method: req.method, path: req.path, status: error.status, err: errorFields(err) });
    else if (!options.quiet?.(res)) logger.info('request rejected', { requestId, status: error.status, code: error.code, reason: error.message, path: req.path });
    if (res.headersSent) return;
    sendError(res, error);
  };
}
