/** A Redis client for fast-check's scheduler: the interleaving tests' one way to race real commands. */
import type fc from 'fast-check';
import type { Redis } from '@feed/storage';

/** `redis` whose every command waits for the scheduler's turn, labelled by flow and command. */
export function scheduledRedis(redis: Redis, scheduler: fc.Scheduler, flow: string): Redis {
  return new Proxy(redis, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await scheduler.schedule(Promise.resolve(), `${flow} ${String(name)}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
