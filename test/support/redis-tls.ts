/**
 * Certificates for Redis TLS tests, made with openssl in a temporary folder: a CA, a server
 * certificate it signs for 127.0.0.1 and localhost, and a second CA that signed nothing here
 * (a client trusting only it must refuse the server).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'feed-redis-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', '-new', ...newKey, '-keyout', file(`${ca}.key`), '-out', file(`${ca}.crt`), '-days', '2', '-subj', `/CN=feed-test-${ca}`);
  openssl('req', '-new', ...newKey, '-keyout', file('redis.key'), '-out', file('redis.csr'), '-subj', '/CN=localhost');
  writeFileSync(file('ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
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
