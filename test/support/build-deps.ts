/** The daily build's dependencies in a test: the worker's own (buildDepsFrom), on the test's configuration and stores. */
import type { Config } from '@feed/config';
import { createLogger } from '@feed/logger';
import { BuildStore, type Redis, type RedisKeys, type VideoModel } from '@feed/storage';
import { buildDepsFrom, type BuildDeps } from '@feed/worker';

/**
 * As `buildDepsFrom(services.config, ...)`, with a silent logger, except that a held lock is
 * reported at once (`lockWaitMs` 0: the tests of waiting set their own); `overrides` last.
 */
export function testBuildDeps(services: { config: Config; redis: Redis; keys: RedisKeys }, videos: VideoModel, overrides: Partial<BuildDeps> = {}): BuildDeps {
  return { ...buildDepsFrom(services.config, { store: new BuildStore(services.redis, services.keys), videos, logger: createLogger({ silent: true }) }), lockWaitMs: 0, ...overrides };
}
