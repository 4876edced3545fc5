/**
 * One error type for expected failures and one Express error middleware. Clients get JSON
 * `{ error: { code, message } }` and never a stack trace.
 */
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { logger } from '@feed/logger';

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Operational errors are expected (bad input, missing video); others are bugs. */
    readonly isOperational = true,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new AppError(400, 'bad_request', message);
export const unauthorized = (message = 'a valid bearer token is required') => new AppError(401, 'unauthorized', message);
export const notFound = (message: string) => new AppError(404, 'not_found', message);
export const unavailable = (message: string) => new AppError(503, 'unavailable', message);

export const notFoundRoute: RequestHandler = (req, _res, next) => next(notFound(`no route ${req.method} ${req.path}`));

interface HttpishError {
  status?: number;
  statusCode?: number;
  type?: string;
}

export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  let error: AppError;
  if (err instanceof AppError) error = err;
  else if ((err as HttpishError).type === 'entity.parse.failed') error = badRequest('request body is not valid JSON');
  else if ((err as HttpishError).type === 'entity.too.large') error = new AppError(413, 'payload_too_large', 'request body is too large');
  else if (((err as HttpishError).status ?? 500) < 500) error = new AppError((err as HttpishError).status!, 'bad_request', String((err as Error).message));
  else error = new AppError(500, 'internal', 'internal server error', false);

  const requestId = res.locals.requestId as string | undefined;
  if (error.isOperational) logger.info('request rejected', { requestId, status: error.status, code: error.code, reason: error.message, path: req.path });
  else logger.error('request failed', { requestId, path: req.path, err });
  res.status(error.status).json({ error: { code: error.code, message: error.message } });
};
