/**
 * Process life of the deployables (SPEC D4): the first SIGTERM/SIGINT stops taking work and lets
 * what is held finish or be handed back, within a hard deadline; a second signal exits at once.
 */
import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { logger } from '@feed/logger';

/** Everything must be closed within this, whatever hangs (the orchestrator's grace is 10 s+). */
export const SHUTDOWN_DEADLINE_MS = 9_500;
/** How long in-flight HTTP requests may take to finish before their sockets are cut. */
export const HTTP_DRAIN_MS = 5_000;
/** The API's drain after its propagation delay, and the close of its stores (and last spans) after that. */
export const API_DRAIN_MS = 3_000;
export const API_CLOSE_MS = 1_500;
/** The API's whole shutdown from the signal (SPEC D4): 9.5 s with the default 5 s delay; the manifests' grace covers it. */
export const apiShutdownDeadlineMs = (shutdownDelayMs: number) => shutdownDelayMs + API_DRAIN_MS + API_CLOSE_MS;

/** Calls `stop` on the first SIGTERM/SIGINT, exits 0 when it resolves (1 on failure or deadline); a second signal exits 130. */
export function exitOnSignals(name: string, stop: () => Promise<void>, deadlineMs = SHUTDOWN_DEADLINE_MS): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn(`${name} exiting at once on a second signal`, { signal });
      process.exit(130);
    }
    stopping = true;
    logger.info(`${name} shutting down`, { signal });
    setTimeout(() => {
      logger.error(`${name} shutdown missed its deadline, exiting`, { deadlineMs });
      process.exit(1);
    }, deadlineMs).unref();
    stop().then(
      () => {
        logger.info(`${name} stopped`);
        process.exit(0);
      },
      (err: unknown) => {
        logger.error(`${name} shutdown failed`, { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Stops accepting, closes idle and half-sent connections, lets requests finish, cuts the rest after `drainMs`. */
export function closeHttpServer(server: Server, drainMs = HTTP_DRAIN_MS): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    // A connection that finishes its response becomes idle; close those as they appear.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => server.closeAllConnections(), drainMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/**
 * The API's drain (SPEC D4): every response says `Connection: close`, so keep-alive clients move
 * elsewhere without a reset, while the server accepts for `delayMs` (until the orchestrator stops
 * routing here). Idle sockets stay open meanwhile (closing one races a client sending on it).
 */
export async function drainHttpServer(server: Server, delayMs: number, drainMs = API_DRAIN_MS): Promise<void> {
  server.prependListener('request', (_req, res) => res.setHeader('Connection', 'close'));
  await sleep(delayMs);
  await closeHttpServer(server, drainMs);
}
