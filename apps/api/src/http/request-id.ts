import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { withLogContext } from '@feed/logger';

const ACCEPTED_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** A request id on every log line of the request and in the X-Request-Id response header. */
export const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.header('x-request-id');
  const id = incoming && ACCEPTED_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader('X-Request-Id', id);
  withLogContext({ requestId: id }, next);
};
