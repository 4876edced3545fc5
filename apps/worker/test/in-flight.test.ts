import { InFlight } from '../src/daily-build/in-flight';

/** A promise settled from outside, so the test decides when each write is answered. */
function deferred() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** One full turn of the event loop: long enough for Node to report an unobserved rejection. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('InFlight: the bounded pipeline of the build\'s writes', () => {
  it('when the limit is reached, then add waits for the oldest write, and each settled callback runs in send order', async () => {
    const writes = new InFlight(2);
    const answers = [deferred(), deferred(), deferred()];
    const settled: number[] = [];
    await writes.add(answers[0].promise, () => void settled.push(0));
    const order: string[] = [];
    const addingSecond = writes.add(answers[1].promise, () => void settled.push(1)).then(() => order.push('add returned'));
    // The second write fills the pipeline: add waits until the oldest is answered. The newer write
    // is answered first; whatever reacts to that alone runs in microtasks, before the oldest is
    // answered in the next turn, so it would come first in `order`.
    answers[1].resolve();
    setImmediate(() => {
      order.push('oldest answered');
      answers[0].resolve();
    });
    await addingSecond;
    expect(order).toEqual(['oldest answered', 'add returned']);
    expect(settled).toEqual([0]);
    await writes.add(answers[2].promise, () => void settled.push(2));
    answers[2].resolve();
    await writes.drain();
    expect(settled).toEqual([0, 1, 2]);
  });

  it('when every write in flight fails (the store went away), then the first failure surfaces and none is an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const writes = new InFlight(3);
      const answers = [deferred(), deferred()];
      await writes.add(answers[0].promise);
      await writes.add(answers[1].promise);
      answers[1].reject(new Error('second lost'));
      answers[0].reject(new Error('first lost'));
      await expect(writes.drain()).rejects.toThrow('first lost');
      await nextTurn();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
