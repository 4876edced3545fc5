/**
 * The one deadline idiom: a promise raced against a timer. node-redis v5 has no per-command timeout
 * and BullMQ's ioredis queues while Redis is gone, so every wait on a store that may hang goes
 * through `withDeadline`. SPEC R17: degradation is bounded in time.
 */

/** A wait given to `withDeadline` did not settle in time (Redis, MongoDB, BullMQ's close: any store). */
export class DeadlineExceededError extends Error {}

/** A Redis call of a request's budget (`Deadline`) failed or missed its deadline. */
export class RedisCallError extends Error {}

/** A Redis call was not even sent: an earlier call of the request used up its deadline. */
export class DeadlineSpentError extends RedisCallError {}

/**
 * Rejects when `promise` has not settled within `ms`, after the turn's I/O (setImmediate): on a busy
 * loop timers run first, and a claim answered in time would have moved the offset for nothing.
 * `onTimeout` runs with the error just after the rejection (MongoBudget aborts its call with it).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string, onTimeout?: (err: DeadlineExceededError) => void): Promise<T> {
  // One promise settled by whichever comes first (half the cost of Promise.race with a finally: every Redis call of a page).
  return new Promise<T>((resolve, reject) => {
    const expire = () => {
      const err = new DeadlineExceededError(`${what} timed out after ${ms} ms`);
      reject(err);
      onTimeout?.(err);
    };
    const timer = setTimeout(() => setImmediate(expire), ms);
    // A deadline never keeps the process alive on its own (a shutdown is not held up by it).
    timer.unref();
    promise.then((value) => (clearTimeout(timer), resolve(value)), (err: unknown) => (clearTimeout(timer), reject(err)));
  });
}

/** One request's Redis budget: a stalled Redis costs it at most `ms` in all, however many calls. */
export class Deadline {
  /** When the budget ends, on the monotonic clock: a step of the wall clock (NTP, a resumed VM) never shortens it. */
  private readonly endsAt: number;

  constructor(readonly ms: number) {
    this.endsAt = performance.now() + ms;
  }

  /** Makes `call` within the time left; when none is left, the call is not made at all. */
  async run<T>(call: () => Promise<T>, what: string): Promise<T> {
    // Whole milliseconds (as MongoBudget's): Node keeps a timer list per distinct duration.
    const left = Math.floor(this.endsAt - performance.now());
    if (left <= 0) throw new DeadlineSpentError(`${what} skipped: Redis deadline of ${this.ms} ms used up`);
    try {
      return await withDeadline(call(), left, what);
    } catch (err) {
      if (err instanceof RedisCallError) throw err;
      if (err instanceof DeadlineExceededError) throw new RedisCallError(err.message);
      throw new RedisCallError(`${what} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/**
 * One request's MongoDB budget (SPEC R17): each call gets the time left as an AbortSignal (a stuck
 * operation's socket is closed) and as a race (bounding mongoose's buffering, a shared query).
 */
export class MongoBudget {
  private readonly endsAt: number;

  constructor(readonly ms: number) {
    this.endsAt = performance.now() + ms;
  }

  /**
   * Runs `call` with the time left, else DeadlineExceededError. One timer per call, cleared on
   * settle: `AbortSignal.timeout` fired after every call and built a DOMException, ~2 % of the
   * API's CPU in a like burst (issue 49).
   */
  async run<T>(call: (signal: AbortSignal) => Promise<T>, what: string): Promise<T> {
    const left = Math.floor(this.endsAt - performance.now());
    if (left <= 0) throw new DeadlineExceededError(`${what} skipped: MongoDB budget of ${this.ms} ms used up`);
    const controller = new AbortController();
    // A call past its time is aborted with the deadline's error: its socket is closed.
    return withDeadline(call(controller.signal), left, what, (err) => controller.abort(err));
  }
}

/**
 * One request's whole budget, made once at the edge (`requestBudget`) and passed down. MongoDB's
 * starts with the request, Redis's at its first Redis wait, so a look-up before it does not spend
 * Redis's share. No layer below restarts a clock.
 */
export class RequestBudget {
  readonly mongo: MongoBudget;
  private redisDeadline?: Deadline;

  constructor(private readonly limits: { redisMs: number; mongoMs: number }) {
    this.mongo = new MongoBudget(limits.mongoMs);
  }

  get redis(): Deadline {
    return (this.redisDeadline ??= new Deadline(this.limits.redisMs));
  }
}
