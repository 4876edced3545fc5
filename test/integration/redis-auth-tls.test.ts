/**
 * Redis credentials and TLS on one server (issue 51 part 1): a real redis-server serving TLS only,
 * with requirepass and an ACL user, certificates made by openssl. The storage client and BullMQ
 * connect with REDIS_USERNAME/REDIS_PASSWORD/REDIS_TLS/REDIS_TLS_CA_FILE or with a URL carrying
 * them; a wrong password, none, or an untrusted CA is refused at connect with the setting named.
 * The same on a 3-master Cluster (TLS on the cluster bus too). (The Sentinel topology with both
 * on: sentinel-switch.test.ts.) Ports: 7420; the Cluster 7421-7423, its bus 7431-7433.
 */
import { spawnSync } from 'node:child_process';
import { Queue } from 'bullmq';
import { bullConnectionFactory, closeRedis, connectRedis, type RedisSettings } from '@feed/storage';
import { startProcess, waitUntil, type Managed } from '../../tools/support/processes';
import { redisCli } from '../support/redis-cluster';
import { makeCertificates, type TestCertificates } from '../support/redis-tls';

const PORT = 7420;
const PASSWORD = 'auth-tls-test-secret';
const available = ['redis-server', 'openssl'].every((tool) => spawnSync(tool, ['version']).error === undefined);
const tlsIt = available ? it : it.skip;
let certificates: TestCertificates;
let server: Managed;
const CLUSTER_PORTS = [7421, 7422, 7423];
const cluster: Managed[] = [];

beforeAll(async () => {
  if (!available) return;
  certificates = makeCertificates();
  const acl = ['--user', 'feed', 'on', `>${PASSWORD}`, '~*', '&*', '+@all'];
  server = startProcess(['--port', '0', '--tls-port', String(PORT), ...certificates.serverArgs, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', PASSWORD, ...acl], {}, 'redis-server');
  const ping = () => redisCli(PORT, '--tls', '--cacert', certificates.ca, '-a', PASSWORD, '--no-auth-warning', 'ping');
  await waitUntil(`TLS redis on ${PORT}`, async () => (await ping()) === 'PONG', 10_000);
}, 30_000);

afterAll(async () => {
  await Promise.all(cluster.map((node) => node.stop()));
  await server?.stop();
  certificates?.remove();
});

const settings = (extra: Partial<RedisSettings>): RedisSettings => ({ redisUrl: `redis://127.0.0.1:${PORT}`, redisClusterNodes: undefined, redisTls: true, redisTlsCaFile: certificates.ca, ...extra });

describe('Redis with an ACL user, a password and TLS (issue 51 part 1)', () => {
  tlsIt('when the ACL user, its password and the CA are set, then the storage client and BullMQ both work; a URL carrying them alone works too', async () => {
    for (const config of [settings({ redisUsername: 'feed', redisPassword: PASSWORD }), settings({ redisUrl: `rediss://feed:${PASSWORD}@127.0.0.1:${PORT}`, redisTls: false })]) {
      const redis = await connectRedis(config, { failFast: true });
      await redis.set('auth-tls-test', 'yes');
      expect(await redis.get('auth-tls-test')).toBe('yes');
      await redis.del('auth-tls-test');
      await closeRedis(redis);
      const connection = bullConnectionFactory(config)();
      const queue = new Queue('auth-tls-test', { connection, prefix: 'auth-tls-test' });
      await queue.add('probe', {});
      expect(await queue.count()).toBe(1);
      await queue.obliterate({ force: true });
      await queue.close();
      connection.disconnect();
    }
  });

  tlsIt('when the password is wrong or missing, or the CA did not sign the certificate, then connecting stops at once naming the setting, in the background too', async () => {
    const cases: Array<[Partial<RedisSettings>, RegExp]> = [
      [{ redisUsername: 'feed', redisPassword: 'wrong' }, /REDIS_USERNAME\/REDIS_PASSWORD: .* refused the credentials: WRONGPASS/],
      [{}, /REDIS_USERNAME\/REDIS_PASSWORD: .* refused the credentials: NOAUTH/],
      [{ redisPassword: PASSWORD, redisTlsCaFile: certificates.otherCa }, /REDIS_TLS_CA_FILE\/REDIS_TLS_SERVERNAME: the certificate of .* is not trusted/],
    ];
    for (const [extra, message] of cases) {
      for (const background of [false, true]) {
        const started = performance.now();
        await expect(connectRedis(settings(extra), { failFast: true, background })).rejects.toThrow(message);
        expect(performance.now() - started).toBeLessThan(5_000);
      }
    }
  });
});

describe('a Redis Cluster with a password and TLS (issue 51 part 1)', () => {
  const secure = () => ['--tls', '--cacert', certificates.ca, '-a', PASSWORD, '--no-auth-warning'];
  beforeAll(async () => {
    if (!available) return;
    for (const port of CLUSTER_PORTS) {
      const args = ['--port', '0', '--tls-port', String(port), '--cluster-port', String(port + 10), ...certificates.serverArgs, '--tls-cluster', 'yes', '--cluster-enabled', 'yes'];
      const dir = `${certificates.dir}/node-${port}`;
      spawnSync('mkdir', ['-p', dir]);
      cluster.push(startProcess([...args, '--cluster-config-file', `${dir}/nodes.conf`, '--dir', dir, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', PASSWORD, '--masterauth', PASSWORD], {}, 'redis-server'));
    }
    for (const port of CLUSTER_PORTS) await waitUntil(`TLS cluster node ${port}`, async () => (await redisCli(port, ...secure(), 'ping')) === 'PONG', 10_000);
    const created = spawnSync('redis-cli', [...secure(), '--cluster', 'create', ...CLUSTER_PORTS.map((port) => `127.0.0.1:${port}`), '--cluster-yes'], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`cluster create: ${created.stdout}${created.stderr}`);
    await waitUntil('cluster_state:ok', async () => (await Promise.all(CLUSTER_PORTS.map((port) => redisCli(port, ...secure(), 'cluster', 'info')))).every((info) => info.includes('cluster_state:ok')), 20_000);
  }, 60_000);

  const clusterSettings = (extra: Partial<RedisSettings>): RedisSettings => ({ redisUrl: '', redisClusterNodes: CLUSTER_PORTS.map((port) => `127.0.0.1:${port}`), redisTls: true, redisTlsCaFile: certificates.ca, ...extra });

  tlsIt('when the password and the CA are set, then the storage client reaches every master and BullMQ works; a wrong password or an untrusted CA is refused naming the setting', async () => {
    const redis = await connectRedis(clusterSettings({ redisPassword: PASSWORD }), { failFast: true });
    const keys = Array.from({ length: 30 }, (_, i) => `auth-tls-cluster-${i}`);
    await Promise.all(keys.map((key) => redis.set(key, key)));
    expect(await Promise.all(keys.map((key) => redis.get(key)))).toEqual(keys);
    await Promise.all(keys.map((key) => redis.del(key)));
    await closeRedis(redis);
    const connection = bullConnectionFactory(clusterSettings({ redisPassword: PASSWORD }))();
    const queue = new Queue('auth-tls-cluster', { connection, prefix: '{auth-tls-test}' });
    await queue.add('probe', {});
    expect(await queue.count()).toBe(1);
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
    await expect(connectRedis(clusterSettings({ redisPassword: 'wrong' }), { failFast: true })).rejects.toThrow(/REDIS_USERNAME\/REDIS_PASSWORD: REDIS_CLUSTER_NODES=.* refused the credentials/);
    await expect(connectRedis(clusterSettings({ redisPassword: PASSWORD, redisTlsCaFile: certificates.otherCa }), { failFast: true })).rejects.toThrow(/REDIS_TLS_CA_FILE\/REDIS_TLS_SERVERNAME: the certificate of REDIS_CLUSTER_NODES=.* is not trusted/);
  }, 60_000);
});
