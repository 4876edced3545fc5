/**
 * The write fence's question to the Sentinels (issue 51): "do you all name this node the primary,
 * with no failover under way?". A yes must come from answers given after the question was asked:
 * the fence asks it about a node that has just lost its replica, which is exactly the moment a
 * promotion may have happened. fast-check draws programs of questions about either node, switches
 * of the primary and answers arriving in any order (`fc.scheduler`); every yes is checked against
 * the history of which node was primary from the question on.
 * Seeds: fixed under CI, random otherwise; printed (FC_SEED=<seed> replays).
 */
import fc from 'fast-check';
import { agreementRounds } from '../src/redis-sentinel';

const SEED = Number(process.env.FC_SEED) || (process.env.CI ? 51_051 : Math.floor(Math.random() * 2 ** 31));
const SENTINELS = 3;

const step = fc.oneof(
  fc.record({ kind: fc.constant('ask' as const), node: fc.constantFrom('A', 'B') }),
  fc.constant({ kind: 'switch' as const, node: '' }),
  fc.constant({ kind: 'answer' as const, node: '' }),
);

// 0 ms: a new round starts beside each slow one (every round counts as slow), as with a slow Sentinel.
describe.each([100, 0])('agreementRounds, rounds overlapping after %i ms', (overlapAfterMs) => {
  it('when the primary switches while questions and rounds of answers interleave, then every yes names the node that was primary at some time after its question', async () => {
    console.log(`sentinel agreement seed ${SEED}`);
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(step, { minLength: 1, maxLength: 40 }), async (s, program) => {
        /** The primary the Sentinels name from each step of the program on. */
        const primaryAt: string[] = ['A'];
        let now = 0;
        // A round's answers are the primary at its start (the Sentinels answer at once; delivery is the scheduler's).
        const askAll = () => {
          const named = primaryAt[now]!;
          return s.schedule(Promise.resolve(Array<string>(SENTINELS).fill(named)), `round named ${named} at step ${now}`);
        };
        const agree = agreementRounds(askAll, SENTINELS, overlapAfterMs);
        const questions: Promise<void>[] = [];
        for (const { kind, node } of program) {
          if (kind === 'switch') primaryAt.push(primaryAt[now]! === 'A' ? 'B' : 'A');
          else primaryAt.push(primaryAt[now]!);
          now++;
          if (kind === 'ask') {
            const asked = now;
            questions.push(
              agree(node).then((yes) => {
                if (yes) expect(primaryAt.slice(asked, now + 1)).toContain(node);
              }),
            );
          }
          if (kind === 'answer' && s.count() > 0) await s.waitOne();
          // What follows from this step (a round starting, a question answered) happens before the next step.
          await new Promise((resolve) => setImmediate(resolve));
        }
        await s.waitFor(Promise.all(questions));
      }),
      { seed: SEED, numRuns: process.env.CI ? 200 : 100 },
    );
  });
});

describe('agreementRounds with a slow Sentinel', () => {
  it('when a round hangs, then a question asked after it started is answered by a round started beside it', async () => {
    const rounds: Array<(answers: string[]) => void> = [];
    const agree = agreementRounds(() => new Promise<string[]>((answer) => rounds.push(answer)), SENTINELS, 10);
    const first = agree('A');
    await new Promise((resolve) => setImmediate(resolve));
    expect(rounds).toHaveLength(1); // the first round is out and never answers
    const second = agree('A');
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => rounds.length === 2 && (clearInterval(poll), resolve()), 5);
    });
    rounds[1]!(Array<string>(SENTINELS).fill('A'));
    expect(await second).toBe(true);
    rounds[0]!([]);
    expect(await first).toBe(false);
  });
});
