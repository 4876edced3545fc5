/**
 * The one place a request's budget is made: every request gets a `RequestBudget`, which routes
 * read with `budgetOf(res)` and pass down; nothing below starts a clock of its own.
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
