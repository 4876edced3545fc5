/**
 * An admin change while Redis fails over (issue 51): a write no replica confirmed behind Sentinels
 * (NotDurableError), or one a demoted primary refuses (READONLY) or a Redis not yet serving
 * (LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN), is the store unavailable for a moment: 503 with
 * Retry-After, never a 500 logged as a bug.
 */
import { SimpleError } from 'redis';
import request from '../../../test/support/contract';
import { NotDurableError, type Redis } from '@feed/storage';
import { useTestServices } from '../../../test/support/services';
import { testApi } from '../../../test/support/api';

const s = useTestServices('rollout_redis_failover');

/** `s.redis`, whose scripts (the rollout's writes) fail with `failure()`. */
const failingScripts = (failure: () => Error): Redis =>
  new Proxy(s.redis, {
    get(target, prop) {
      if (prop === 'evalSha' || prop === 'eval') return () => Promise.reject(failure());
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });

const notDurable = () => Object.assign(new NotDurableError('no replica confirmed the write within 500 ms'), { written: { reply: 1, still: () => true } });

it.each([
  ['not confirmed by a replica (NotDurableError)', notDurable],
  ['refused by a demoted primary (READONLY)', () => new SimpleError("READONLY You can't write against a read only replica.")],
  ['refused by a Redis loading its data (LOADING)', () => new SimpleError('LOADING Redis is loading the dataset in memory')],
  ['refused while the cluster is down (CLUSTERDOWN)', () => new SimpleError('CLUSTERDOWN The cluster is down')],
])('when the rollout write is %s, then the change answers 503 with Retry-After, not 500', async (_name, failure) => {
  const app = testApi(s, {}, { redis: failingScripts(failure) }).app;
  const admin = { Authorization: `Basic ${Buffer.from(`${s.config.adminUser}:${s.config.adminPassword}`).toString('base64')}` };
  const res = await request(app).put('/api/admin/rollout').set(admin).send({ enabled: false });
  expect({ status: res.status, code: res.body.error?.code, retryAfter: res.headers['retry-after'] }).toEqual({ status: 503, code: 'unavailable', retryAfter: '2' });
});
