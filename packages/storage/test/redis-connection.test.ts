/** One connection policy for both Redis client families (issue 24): parsed once, applied alike. */
import { bullConnectionFactory, CONNECT_TIMEOUT_MS, nodeRedisSocket, reconnectDelay, redisTarget } from '../src';

describe('Redis connection policy', () => {
  it('when REDIS_CLUSTER_NODES is given, then its nodes are parsed once into host and port', () => {
    expect(redisTarget({ redisUrl: 'redis://ignored:6379', redisClusterNodes: ['10.0.0.1:7000', 'redis-b.internal:7001'] })).toEqual({
      mode: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b.internal', port: 7001 },
      ],
    });
    expect(redisTarget({ redisUrl: 'redis://127.0.0.1:6379/3', redisClusterNodes: undefined })).toEqual({ mode: 'standalone', url: 'redis://127.0.0.1:6379/3' });
  });

  it('when REDIS_SENTINELS is given, then the Sentinels and the master name are the target, and BullMQ asks them for the primary', () => {
    const config = { redisUrl: 'redis://ignored:6379', redisClusterNodes: undefined, redisSentinels: ['s1:26379', 's2:26380'], redisSentinelMaster: 'feed' };
    expect(redisTarget(config)).toEqual({ mode: 'sentinel', name: 'feed', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }] });
    const bull = bullConnectionFactory(config)();
    bull.disconnect();
    expect(bull.options).toMatchObject({ name: 'feed', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }], maxRetriesPerRequest: null, failoverDetector: true });
  });

  it('when reconnecting, then both families back off 50 ms doubling to 2 s, for ever', () => {
    expect([0, 1, 2, 5, 6, 100].map(reconnectDelay)).toEqual([50, 100, 200, 1600, 2000, 2000]);
    expect(nodeRedisSocket).toEqual({ connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: reconnectDelay });
  });

  it("when BullMQ's connections are made, then they carry the same connect timeout and backoff, standalone and cluster", async () => {
    const standalone = bullConnectionFactory({ redisUrl: process.env.TEST_REDIS_URL!, redisClusterNodes: undefined })();
    const cluster = bullConnectionFactory({ redisUrl: '', redisClusterNodes: ['127.0.0.1:1'] })();
    cluster.on('error', () => undefined);
    try {
      expect(standalone.options).toMatchObject({ connectTimeout: CONNECT_TIMEOUT_MS, retryStrategy: reconnectDelay, maxRetriesPerRequest: null });
      expect(cluster.options).toMatchObject({ clusterRetryStrategy: reconnectDelay, redisOptions: { connectTimeout: CONNECT_TIMEOUT_MS, retryStrategy: reconnectDelay, maxRetriesPerRequest: null } });
    } finally {
      standalone.disconnect();
      cluster.disconnect();
    }
  });
});
