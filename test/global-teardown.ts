import type { EmbeddedMongo } from '@feed/embedded-mongo';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __EMBEDDED_MONGO__?: EmbeddedMongo }).__EMBEDDED_MONGO__?.stop();
}
