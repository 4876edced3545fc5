/**
 * winston logger: JSON lines in production, readable lines in development. Every line written
 * inside `withLogContext` (one API request, one build job) carries that context's fields.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import winston from 'winston';
import { loggingConfig } from '@feed/config';

const context = new AsyncLocalStorage<Record<string, unknown>>();

/** Runs `fn` so that every log line inside it carries `fields` (e.g. the request id). */
export function withLogContext<T>(fields: Record<string, unknown>, fn: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, fn);
}

const addContext = winston.format((info) => Object.assign(info, context.getStore()));

/** Errors are logged as message + stack, never as an empty object. */
const serializeErrors = winston.format((info) => {
  for (const [key, value] of Object.entries(info)) {
    if (value instanceof Error) (info as Record<string, unknown>)[key] = { message: value.message, name: value.name, stack: value.stack };
  }
  return info;
});

const formatFor = (json: boolean) =>
  winston.format.combine(
    addContext(),
    serializeErrors(),
    winston.format.timestamp(),
    json
      ? winston.format.json()
      : winston.format.printf(({ level, message, timestamp, ...fields }) => {
          const rest = Object.keys(fields).length ? ` ${JSON.stringify(fields)}` : '';
          return `${String(timestamp)} ${level} ${String(message)}${rest}`;
        }),
  );

export function createLogger(options: { level?: string; json?: boolean; silent?: boolean } = {}): winston.Logger {
  const { logLevel, nodeEnv } = loggingConfig();
  return winston.createLogger({
    level: options.level ?? logLevel,
    silent: options.silent ?? nodeEnv === 'test',
    format: formatFor(options.json ?? nodeEnv === 'production'),
    transports: [new winston.transports.Console()],
  });
}

export type Logger = winston.Logger;

/** The process-wide logger: until `configureLogger`, it follows NODE_ENV and LOG_LEVEL (`loggingConfig`). */
export const logger = createLogger();

/** Applies the validated configuration (LOG_LEVEL; NODE_ENV: JSON lines in production, silent in tests). */
export function configureLogger({ logLevel, nodeEnv }: { logLevel: string; nodeEnv: string }): void {
  logger.level = logLevel;
  logger.silent = nodeEnv === 'test';
  logger.format = formatFor(nodeEnv === 'production');
}

/** An error listener writing each distinct message once per `intervalMs`: an outage repeats it on every reconnect. */
export function oncePerMessage(intervalMs: number, write: (err: Error) => void): (err: Error) => void {
  const lastWritten = new Map<string, number>();
  return (err) => {
    const now = Date.now();
    if ((lastWritten.get(err.message) ?? -Infinity) > now - intervalMs) return;
    lastWritten.set(err.message, now);
    write(err);
  };
}
