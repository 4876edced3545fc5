/**
 * Certificates for Redis TLS tests, made with openssl in a temporary folder: a CA, a server
 * certificate it signs for 127.0.0.1 and localhost, and a second CA that signed nothing here
 * (a client trusting only it must refuse the server). `SecureRedis`: such certificates with an ACL
 * user and passwords, as the failover, rolling-deploy and stall tests run their Redis (issue 51 part 1).
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, startProcess, waitUntil } from '../../tools/support/processes';

export interface TestCertificates {
  dir: string;
  ca: string;
  cert: string;
  key: string;
  /** A CA that did not sign `cert`. */
  otherCa: string;
  /** Flags of redis-server (data node or Sentinel) serving TLS with these files. */
  serverArgs: string[];
  remove(): void;
}

/** With `serverName`, the server certificate names only that host (not 127.0.0.1): a client must send it (REDIS_TLS_SERVERNAME). */
export function makeCertificates(serverName?: string): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-redis-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', '-new', ...newKey, '-keyout', file(`${ca}.key`), '-out', file(`${ca}.crt`), '-days', '2', '-subj', `/CN=feed-test-${ca}`);
  openssl('req', '-new', ...newKey, '-keyout', file('redis.key'), '-out', file('redis.csr'), '-subj', `/CN=${serverName ?? 'localhost'}`);
  writeFileSync(file('ext'), `subjectAltName=${serverName ? `DNS:${serverName}` : 'IP:127.0.0.1,DNS:localhost'}\n`);
  openssl('x509', '-req', '-in', file('redis.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('redis.crt'), '-days', '2', '-extfile', file('ext'));
  return {
    dir,
    ca: file('ca.crt'),
    cert: file('redis.crt'),
    key: file('redis.key'),
    otherCa: file('other-ca.crt'),
    serverArgs: ['--tls-cert-file', file('redis.crt'), '--tls-key-file', file('redis.key'), '--tls-ca-cert-file', file('ca.crt'), '--tls-auth-clients', 'no'],
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** TLS only, the ACL user `feed` with `password` (credentialArgs); `sentinelPassword`: the Sentinels'. */
export interface SecureRedis {
  tls: TestCertificates;
  /** The name the certificate was made for (makeCertificates' `serverName`): REDIS_TLS_SERVERNAME. */
  serverName?: string;
  password: string;
  sentinelPassword?: string;
}

/** New certificates for a host name only (clients must send it: REDIS_TLS_SERVERNAME) and these passwords. */
export const secureRedis = (password: string, sentinelPassword?: string): SecureRedis => ({ tls: makeCertificates('redis.feed.test'), serverName: 'redis.feed.test', password, sentinelPassword });

/**
 * redis-server flags of a data node's credentials: the ACL user `feed` with `password`; the default
 * user (replication's masterauth) with another, so that a client dropping REDIS_USERNAME is refused.
 */
export const credentialArgs = (password: string) => ['--requirepass', `${password}-default`, '--masterauth', `${password}-default`, '--user', 'feed', 'on', `>${password}`, '~*', '&*', '+@all'];

/** redis-cli flags for a node with credentialArgs(`password`) and, with `tls`, TLS. */
export const cliFlags = (tls: TestCertificates | undefined, password: string | undefined) => [...(tls ? ['--tls', '--cacert', tls.ca] : []), ...(password ? ['--user', 'feed', '--pass', password, '--no-auth-warning'] : [])];

/** The deployables' settings for `secure`: the ACL user, its password, TLS with the CA; the Sentinels' password and TLS when they have one. */
export const secureEnv = (secure: SecureRedis): Record<string, string> => ({
  REDIS_USERNAME: 'feed',
  REDIS_PASSWORD: secure.password,
  REDIS_TLS: 'true',
  REDIS_TLS_CA_FILE: secure.tls.ca,
  ...(secure.serverName && { REDIS_TLS_SERVERNAME: secure.serverName }),
  ...(secure.sentinelPassword && { REDIS_SENTINEL_PASSWORD: secure.sentinelPassword, REDIS_SENTINEL_TLS: 'true' }),
});

/** A redis-server of the test's own on a free port (CHILD_PORT_RANGE), TLS only with `secure`'s credentials, answering PING; its URL without credentials. */
export async function startSecureRedis(secure: SecureRedis): Promise<{ port: number; url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const server = startProcess(['--port', '0', '--tls-port', String(port), ...secure.tls.serverArgs, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...credentialArgs(secure.password)], {}, 'redis-server');
  const ping = () => promisify(execFile)('redis-cli', ['-p', String(port), ...cliFlags(secure.tls, secure.password), 'ping']).then((r) => r.stdout.trim() === 'PONG');
  await waitUntil(`TLS redis on ${port}`, ping, 10_000).catch(async (err: unknown) => {
    await server.stop('SIGKILL');
    throw new Error(`${String(err)}: ${server.output.join('').slice(-1000)}`);
  });
  return { port, url: `redis://127.0.0.1:${port}`, stop: () => server.stop() };
}
