/**
 * StoreHealth's verdicts over time (fake timers: time is the subject; the probes are stand-ins
 * answering as they are told). A store fails readiness only once every probe for
 * FAILING_AFTER_MS failed; one answer resets that; a scrape waits SCRAPE_WAIT_MS at most.
 */
import { FAILING_AFTER_MS, SCRAPE_WAIT_MS, StoreHealth } from '../src';

// setImmediate real: withDeadline's rejection waits for the turn's I/O.
beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate'] }));
afterEach(() => jest.useRealTimers());

function stores() {
  const answer = { redis: 'ok' as 'ok' | 'down' | 'hang', mongo: 'ok' as 'ok' | 'down' | 'hang' };
  const probe = (store: 'redis' | 'mongo') => () => (answer[store] === 'hang' ? new Promise<'ok'>(() => undefined) : Promise.resolve(answer[store] as 'ok' | 'down'));
  return { answer, health: new StoreHealth({ redis: probe('redis'), mongo: probe('mongo') }) };
}

describe('StoreHealth', () => {
  it('when a store fails its probes for less than FAILING_AFTER_MS, then it is down but not failing; past it, failing; one answer resets it', async () => {
    const { answer, health } = stores();
    answer.mongo = 'down';
    expect(await health.probe()).toEqual({ redis: 'ok', mongo: 'down', failing: [] });
    jest.advanceTimersByTime(FAILING_AFTER_MS - 1);
    expect((await health.probe()).failing).toEqual([]);
    answer.mongo = 'ok';
    expect(await health.probe()).toEqual({ redis: 'ok', mongo: 'ok', failing: [] });
    answer.mongo = 'down';
    await health.probe();
    jest.advanceTimersByTime(FAILING_AFTER_MS - 1);
    expect((await health.probe()).failing).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(await health.probe()).toEqual({ redis: 'ok', mongo: 'down', failing: ['mongo'] });
  });

  it('when a probe hangs, then a scrape answers after SCRAPE_WAIT_MS with that store at 0 and the other at 1', async () => {
    const { answer, health } = stores();
    answer.redis = 'hang';
    const scraped = health.upForScrape();
    await jest.advanceTimersByTimeAsync(SCRAPE_WAIT_MS);
    expect(await scraped).toEqual({ redis: 0, mongo: 1 });
  });
});
