/**
 * The MongoDB of the test run: a real one when TEST_MONGO_URL is given (global-setup.ts), the
 * embedded server otherwise. Every test isolates itself by database name.
 */
import { randomBytes } from 'node:crypto';

/** True when the run is against a real MongoDB (TEST_MONGO_URL). */
export const onRealMongo = process.env.TEST_MONGO_KIND === 'real';

/** The URL of a database of the caller's own on the run's MongoDB (options in the URL are kept). */
export function testMongoUrl(name: string): string {
  const url = new URL(process.env.TEST_MONGO_URI!);
  url.pathname = `/t_${name.replace(/\W/g, '_')}_${randomBytes(3).toString('hex')}`;
  return url.toString();
}
