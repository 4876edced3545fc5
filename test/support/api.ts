/** An in-process API for a test, on the running test's key prefix, closed after that test. */
import type { Config } from '@feed/config';
import { createApp, type Api, type ApiDeps } from '@feed/api';
import type { TestServices } from './services';

export function testApi(s: TestServices, config: Partial<Config> = {}, deps: Partial<ApiDeps> = {}): Api {
  const api = createApp({ config: { ...s.config, ...config }, redis: s.redis, mongo: s.mongo, ...deps });
  // Its readout flushes on a timer: stop it (and write what it holds) before the keys are deleted.
  s.disposeAfter(() => api.feed.readout.close());
  return api;
}
