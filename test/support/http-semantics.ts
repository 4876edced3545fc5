/** Checks of SPEC C's HTTP semantics over a deployable's whole route table (both deployables' tests use them). */
import request, { type Test } from './contract';
import type { Express } from 'express';
import type { Connection } from 'mongoose';
import { routeTable } from '@feed/http';
import type { Redis } from '@feed/storage';

/** Every key under `prefix` with its DUMP (content and type), so any write shows. */
export async function redisState(redis: Redis, prefix: string): Promise<Record<string, string>> {
  const state: Record<string, string> = {};
  for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
    for await (const batch of redis.scanKeys(pattern)) {
      for (const key of batch) state[key] = String(await redis.eval("return redis.call('DUMP', KEYS[1])", { keys: [key] }));
    }
  }
  return state;
}

/** Every document of every collection of the connection's database. */
export async function mongoState(mongo: Connection): Promise<Record<string, string>> {
  const state: Record<string, string> = {};
  for (const { name } of await mongo.db!.listCollections().toArray()) {
    state[name] = JSON.stringify(await mongo.db!.collection(name).find({}).sort({ _id: 1 }).toArray());
  }
  return state;
}

/** The app's routes with a concrete path (each `:param` filled with `param`). */
export function concreteRoutes(app: Express, param: string): Array<{ pattern: string; path: string; methods: string[] }> {
  return routeTable(app).map(({ path, methods }) => ({ pattern: path, path: path.replace(/:[A-Za-z_]+/g, param), methods }));
}

/** Methods no route of either deployable answers, to probe 405 with. */
export const PROBE_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'TRACE'] as const;

/** A request of `method` (supertest names them in lower case). */
export function send(app: Express, method: string, path: string): Test {
  return request(app)[method.toLowerCase() as 'get' | 'post' | 'put' | 'delete' | 'patch' | 'head' | 'trace'](path);
}
