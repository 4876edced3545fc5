/**
 * A give-back behind Sentinels (issue 51): a claim that ran on the old primary but no replica
 * confirmed is given back over the connection that claimed, checked just before the give-back
 * is sent (ring-claims.ts). The give-back must be one command: a NOSCRIPT answer followed by an
 * EVAL would send the EVAL to whichever primary the client uses by then, where other claims may
 * have moved the cursor past those positions (a hole there serves them twice).
 */
import { createRedisKeys, unclaimPositions, type RingVersion } from '../src';

const ring: RingVersion = { version: '20260101', length: 100, buildId: 'b', offsetBuckets: 4, expiresAt: 0 };

it('a give-back whose node lacks the script still runs on that node, not on the primary switched to meanwhile', async () => {
  const ranOn: string[] = [];
  let current = 'old primary';
  const node = (name: string) => ({
    evalSha: () => {
      if (name === 'new primary') return Promise.resolve((ranOn.push(name), 0));
      // The old primary's cache lacks the script; the switch is heard while its answer is on the way.
      current = 'new primary';
      return Promise.reject(new Error('NOSCRIPT No matching script. Please use EVAL.'));
    },
    eval: () => Promise.resolve((ranOn.push(name), 0)),
  });
  const nodes: Record<string, ReturnType<typeof node>> = { 'old primary': node('old primary'), 'new primary': node('new primary') };
  // As the Sentinel client does: each command goes to the primary in use when it is sent.
  const redis = new Proxy({}, { get: (_target, prop: 'evalSha' | 'eval') => nodes[current][prop] });

  await unclaimPositions(redis as never, createRedisKeys('give-back:'), ring, 'user-1', { offset: 10, count: 10, at: 10 });
  expect(ranOn).toEqual(['old primary']);
});
