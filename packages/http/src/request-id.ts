import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';

const ACCEPTED_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** A request id in X-Request-Id and on each log line (`requestIdOf(res)`); not AsyncLocalStorage, ~7 % of throughput on Node 20. */
export const requestId =
  (annotate?: (id: string) => void): RequestHandler =>
  (req, res, next) => {
    const incoming = req.header('x-request-id');
    const id = incoming && ACCEPTED_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    res.locals.requestId = id;
    annotate?.(id);
    next();
  };

export const requestIdOf = (res: Response): string => res.locals.requestId as string;
