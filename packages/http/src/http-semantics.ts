/** HTTP semantics both deployables share (SPEC C): 405 with `Allow`, the route table, a server bounding slow clients. */
import { createServer, type Server } from 'node:http';
import type { Express, RequestHandler } from 'express';
import { AppError, notFound } from './errors';

/** `/API/x` and `/x/` are not `/x` (404): a path answers exactly as its document names it (SPEC C, D6). */
export const ROUTING = { caseSensitive: true, strict: true } as const;

/** Express's app settings for ROUTING (the app's own router is built from them). */
export function routeStrictly(app: Express): void {
  app.set('case sensitive routing', ROUTING.caseSensitive);
  app.set('strict routing', ROUTING.strict);
}

/** One route of an app: its full path pattern and the methods it answers (HEAD wherever GET is). */
export interface RouteEntry {
  path: string;
  methods: string[];
}

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle: { stack?: unknown[] };
  match(path: string): { path: string } | false;
  rawPath?: unknown;
}

/** A layer of Express 5's router (the `router` package); its published types lack `match` and `methods`. */
function isLayer(value: unknown): value is Layer {
  return typeof value === 'object' && value !== null && typeof (value as { match?: unknown }).match === 'function';
}

function stackOf(app: Express): Layer[] {
  const stack: unknown[] = app.router.stack;
  return stack.filter(isLayer);
}

/** Methods as `Allow` names them: upper case, HEAD beside GET (Express answers HEAD with the GET route). */
function allowed(methods: Iterable<string>): string[] {
  const names = new Set([...methods].filter((m) => m !== '_all').map((m) => m.toUpperCase()));
  if (names.has('GET')) names.add('HEAD');
  return [...names].sort();
}

/** Methods `app` answers for `path`, nested routers included: empty if unknown, null for `all`. */
export function allowedMethods(app: Express, path: string): string[] | null {
  const methods = new Set<string>();
  const walk = (stack: Layer[], rest: string) => {
    for (const layer of stack) {
      let matched: { path: string } | false;
      try {
        matched = layer.match(rest);
      } catch {
        continue;
      }
      if (!matched) continue;
      if (layer.route) Object.keys(layer.route.methods).forEach((m) => methods.add(m));
      else if (layer.handle.stack) walk(layer.handle.stack.filter(isLayer), rest.slice(matched.path.length) || '/');
    }
  };
  walk(stackOf(app), path);
  return methods.has('_all') ? null : allowed(methods);
}

/** Every route with a literal path (the parameterised ones under a mounted router are left to it). */
export function routeTable(app: Express): RouteEntry[] {
  const routes = new Map<string, Set<string>>();
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat()) {
          const full = prefix + path;
          const methods = routes.get(full) ?? new Set<string>();
          Object.keys(layer.route.methods).forEach((m) => methods.add(m));
          routes.set(full, methods);
        }
      } else if (layer.handle.stack && (typeof layer.rawPath === 'string' || layer.rawPath === undefined)) {
        walk(layer.handle.stack.filter(isLayer), prefix + (typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : ''));
      }
    }
  };
  walk(stackOf(app), '');
  return [...routes].map(([path, methods]) => ({ path, methods: allowed(methods) }));
}

/** 405 with `Allow` (RFC 9110 15.5.6), mounted before the 404; OPTIONS gets `Allow` with 204. */
export function methodNotAllowed(app: Express): RequestHandler {
  return (req, res, next) => {
    const methods = allowedMethods(app, req.path);
    if (methods === null || methods.length === 0 || methods.includes(req.method)) return next();
    res.setHeader('Allow', methods.join(', '));
    // OPTIONS asks which methods there are (CORS preflights are answered before this).
    if (req.method === 'OPTIONS') return void res.status(204).end();
    next(new AppError(405, 'method_not_allowed', `${req.method} is not allowed on ${req.path}; allowed: ${methods.join(', ')}`));
  };
}

/** OPTIONS before credentials: 204 with `Allow`, or 404; a CORS preflight under `corsPrefix` goes on to CORS with `Allow` set. */
export function answerOptions(app: Express, corsPrefix?: string): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'OPTIONS') return next();
    const methods = allowedMethods(app, req.path);
    if (methods === null) return next();
    if (methods.length === 0) return next(notFound(`no route ${req.method} ${req.path}`));
    res.setHeader('Allow', methods.join(', '));
    if (corsPrefix && req.path.startsWith(`${corsPrefix}/`) && req.header('access-control-request-method')) return next();
    res.status(204).end();
  };
}

/** The bounds on slow clients (SPEC C), from the configuration. */
export interface ServerLimits {
  /** Time to receive a request's headers, then 408. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, body included, then 408. */
  requestTimeoutMs: number;
  /** Connections held at once; more are refused (and idle keep-alive ones closed), so a few trickling clients cannot hold the instance. */
  maxConnections: number;
}

/** A server with the limits; timeouts checked at a tenth of the shorter bound (Node's 30 s default sent 408s late). */
export function createHttpServer(app: Express, limits: ServerLimits): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 10))),
    },
    app,
  );
  server.maxConnections = limits.maxConnections;
  // At the limit idle keep-alive connections yield, as nginx's do, so the refused client's retry is served.
  server.on('drop', () => server.closeIdleConnections());
  return server;
}
