/**
 * The one place a request's budget is made (STYLE: one budget per request, made at the edge): a
 * middleware that gives every request a `RequestBudget` (its Redis deadline and MongoDB budget),
 * which routes read with `budgetOf(res)` and pass to the services. Every bounded wait of a
 * request reads this object; nothing below it starts a clock of its own.
 */
import type { RequestHandler, Response } from 'express';
import { RequestBudget } from '@feed/storage';

export const requestBudget =
  (limits: { redisMs: number; mongoMs: number }): RequestHandler =>
  (_req, res, next) => {
    res.locals.budget = new RequestBudget(limits);
    next();
  };

/** The budget `requestBudget` made for this request. */
export const budgetOf = (res: Response): RequestBudget => res.locals.budget as RequestBudget;
