/**
 * The read path's Redis deadline (R17, R11) against a real Redis: a reply Redis sent in time is
 * used even when the event loop was too busy to read it before the deadline's timer came due.
 */
import { createClient } from 'redis';
import { Deadline, DeadlineExceededError, DeadlineSpentError, RedisCallError, RequestBudget, withDeadline } from '../src/deadline';

const connect = () => createClient({ url: process.env.TEST_REDIS_URL! }).connect();
let redis: Awaited<ReturnType<typeof connect>>;

beforeAll(async () => {
  redis = await connect();
});

afterAll(async () => {
  await redis.quit();
});

/** Blocks the event loop, as a saturated API process does, for `ms`. */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

describe('withDeadline', () => {
  it('when the event loop is blocked past the deadline while the reply arrives, then the reply is used', async () => {
    const call = withDeadline(redis.ping(), 20, 'PING');
    // After this turn's writes (the command is on the wire), block past the deadline.
    await new Promise<void>((resolve) => setImmediate(() => resolve(busy(100))));
    await expect(call).resolves.toBe('PONG');
  });

  it('when a wait does not settle within the deadline, then it is rejected naming it, as a deadline (not a Redis) error', async () => {
    const blocker = await connect();
    try {
      const stalled = blocker.blPop(`deadline-test:${process.pid}:nothing`, 1);
      const late = withDeadline(stalled, 50, 'BLPOP');
      await expect(late).rejects.toThrow('BLPOP timed out after 50 ms');
      await expect(late).rejects.toBeInstanceOf(DeadlineExceededError);
      await expect(late).rejects.not.toBeInstanceOf(RedisCallError);
      await stalled;
    } finally {
      await blocker.quit();
    }
  });

  it('when a Redis call of a request budget does not answer in time, then it is a Redis call error naming it', async () => {
    const blocker = await connect();
    try {
      const stalled = blocker.blPop(`deadline-test:${process.pid}:nothing`, 1);
      const late = new Deadline(50).run(() => stalled, 'BLPOP');
      await expect(late).rejects.toThrow(/^BLPOP timed out after/);
      await expect(late).rejects.toBeInstanceOf(RedisCallError);
      await stalled;
    } finally {
      await blocker.quit();
    }
  });

  it('when a request has used up its budget, then its next Redis call is not made at all', async () => {
    const spent = new Deadline(0);
    const call = jest.fn(() => redis.ping());
    await expect(spent.run(call, 'PING')).rejects.toThrow(new DeadlineSpentError('PING skipped: Redis deadline of 0 ms used up'));
    expect(call).not.toHaveBeenCalled();
  });
});

describe('RequestBudget', () => {
  it('when a request waits on MongoDB before its first Redis call, then the Redis deadline is still whole', async () => {
    const budget = new RequestBudget({ redisMs: 100, mongoMs: 1_000 });
    await budget.mongo.run(() => new Promise((resolve) => setTimeout(resolve, 150)), 'a slow video look-up');
    await expect(budget.redis.run(() => redis.ping(), 'PING')).resolves.toBe('PONG');
    expect(budget.redis).toBe(budget.redis);
  });

  it('when the MongoDB budget is spent, then a later MongoDB wait is refused without being made', async () => {
    const budget = new RequestBudget({ redisMs: 100, mongoMs: 0 });
    const call = jest.fn(() => Promise.resolve(1));
    await expect(budget.mongo.run(call, 'find')).rejects.toThrow(DeadlineExceededError);
    expect(call).not.toHaveBeenCalled();
  });

  it("when the driver rejects with the abort signal's reason before the race's timer, then it is still a deadline error", async () => {
    const budget = new RequestBudget({ redisMs: 100, mongoMs: 50 });
    const aborted = budget.mongo.run((signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))), 'insert');
    await expect(aborted).rejects.toThrow(DeadlineExceededError);
  });

  it('when a MongoDB call settles in time, then its signal is never aborted afterwards (no timer outlives the call)', async () => {
    let answered: AbortSignal | undefined;
    await new RequestBudget({ redisMs: 100, mongoMs: 20 }).mongo.run(async (signal) => (answered = signal), 'upsert');
    // A later budget's deadline passing is the condition waited on: the first one's has passed by then.
    let stalled: AbortSignal | undefined;
    await expect(new RequestBudget({ redisMs: 100, mongoMs: 60 }).mongo.run((signal) => ((stalled = signal), new Promise(() => undefined)), 'stalled')).rejects.toThrow(DeadlineExceededError);
    expect(answered?.aborted).toBe(false);
    expect(stalled?.aborted).toBe(true);
    expect(stalled?.reason).toBeInstanceOf(DeadlineExceededError);
  });
});
