/**
 * Development tooling only: when `MONGO_URL` is unset (and not in production), starts the
 * embedded MongoDB-protocol server on EMBEDDED_MONGO_PORT — or reuses the one another local
 * process already started there — and sets `MONGO_URL` for the deployables started next. The
 * deployables themselves never start it: they require `MONGO_URL` (SPEC D2).
 */
import { startEmbeddedMongo, type EmbeddedMongo } from '@feed/embedded-mongo';
import { loadConfig } from '@feed/config';
import { logger } from '@feed/logger';
import { listening } from './processes';

export const LOCAL_DATABASE = 'shortfeed';

/**
 * With `reuseOnly` (the CLI's seed, build, explain, init-history), only an embedded server that
 * is already running is used: one started for a single command would take its data with it.
 */
export async function useLocalMongo(env: NodeJS.ProcessEnv = process.env, options: { reuseOnly?: boolean } = {}) {
  if (env.MONGO_URL === '') delete env.MONGO_URL; // `MONGO_URL=` in a shell means unset
  if (env.MONGO_URL || env.NODE_ENV === 'production') return { stop: async () => undefined };
  const port = loadConfig(env).embeddedMongoPort;
  if (options.reuseOnly) {
    if (!(await listening(port))) {
      throw new Error(
        `MONGO_URL is not set and no embedded MongoDB runs on EMBEDDED_MONGO_PORT=${port}: a server started for this command alone would lose what it wrote when the command exits. Run \`pnpm start\` or \`pnpm cli mongo\` in another terminal, or set MONGO_URL`,
      );
    }
    env.MONGO_URL = `mongodb://127.0.0.1:${port}/${LOCAL_DATABASE}`;
    return { stop: async () => undefined };
  }
  let embedded: EmbeddedMongo | undefined;
  try {
    embedded = await startEmbeddedMongo({ port });
    logger.info('embedded mongodb started', { uri: embedded.uri });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    logger.info('embedded mongodb already running, reusing it', { port });
  }
  env.MONGO_URL = `mongodb://127.0.0.1:${port}/${LOCAL_DATABASE}`;
  // `embedded`: set when this process started the server.
  return { embedded, stop: async () => embedded?.stop() };
}
