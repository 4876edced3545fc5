/**
 * New guest device ids per client address (R23, issue 52): past NEW_DEVICES_PER_ADDRESS new ids
 * from one address a new id is answered 429 with Retry-After, before anything is recorded; known
 * devices and signed-in users are never limited; the address is the socket's peer unless
 * TRUST_PROXY names the proxy whose X-Forwarded-For is believed.
 */
import request from '../../../test/support/contract';
import { guestSlot, isKnownGuest } from '@feed/storage';
import type { Api } from '../src/app';
import { useTestServices } from '../../../test/support/services';
import { testApi, useSplitRollout } from '../../../test/support/api';
import { bearer } from '../../../test/support/feed-fixtures';

const s = useTestServices('new-device-limit', { CURRENT_CACHE_MS: '0', NEW_DEVICES_PER_ADDRESS: '3', NEW_DEVICES_WINDOW_S: '600' });
const split = useSplitRollout(s, '20260724');

const page = (api: Api, headers: Record<string, string>) => request(api.app).get('/api/app/recommend/vid/list').set(headers);
const device = (id: string, address?: string) => ({ 'X-Device-Id': id, ...(address ? { 'X-Forwarded-For': address } : {}) });
const known = (id: string) => isKnownGuest(s.redis, guestSlot(s.keys, s.config.guestBuckets, `g:${id}`));
const limited = async (api: Api) => (await api.metrics.registry.getSingleMetric('feed_new_devices_limited_total')!.get()).values[0]?.value ?? 0;

describe('new guest device ids per client address (R23, issue 52)', () => {
  it('when one address behind a trusted proxy starts a fourth new device, then it is 429 with Retry-After and recorded nowhere; its known devices, a user and another address go on', async () => {
    const api = testApi(s, { shortRecommendV2Percent: 30, trustProxy: 'loopback' });
    for (const id of ['limit-dev-1', 'limit-dev-2', 'limit-dev-3']) await page(api, device(id, '203.0.113.7')).expect(200);
    const refused = await page(api, device('limit-dev-4', '203.0.113.7')).expect(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(600);
    expect(refused.body.error.code).toBe('too_many_new_devices');
    expect(await known('limit-dev-4')).toBe(false);
    // The same refusal on a view: a new device cannot skip the page.
    await request(api.app).post('/api/app/vid/view').set(device('limit-dev-5', '203.0.113.7')).send({ vid: split.ids[0] }).expect(429);
    expect(await limited(api)).toBe(2);
    // Known devices: pages and views, many times.
    for (let i = 0; i < 5; i++) await page(api, device('limit-dev-1', '203.0.113.7')).expect(200);
    await request(api.app).post('/api/app/vid/view').set(device('limit-dev-2', '203.0.113.7')).send({ vid: split.ids[0] }).expect(200);
    // A signed-in user from the same address, even one that sends a device id too.
    await page(api, { ...bearer('limit-user-1'), 'X-Forwarded-For': '203.0.113.7', 'X-Device-Id': 'limit-dev-6' }).expect(200);
    // Another address has budget of its own.
    await page(api, device('limit-dev-4', '198.51.100.1')).expect(200);
    expect(await known('limit-dev-4')).toBe(true);
    expect(await limited(api)).toBe(2);
  });

  it('when one host cycles the addresses of its IPv6 /64, or writes its IPv4 address IPv4-mapped, then they share one budget', async () => {
    const api = testApi(s, { shortRecommendV2Percent: 30, trustProxy: 'loopback' });
    for (const [i, address] of ['2001:db8:7:1::1', '2001:db8:7:1:ffff::2', '2001:0db8:0007:0001:a:b:c:d'].entries()) await page(api, device(`v6-dev-${i}`, address)).expect(200);
    await page(api, device('v6-dev-3', '2001:db8:7:1::4')).expect(429);
    // Another /64 is another subscriber.
    await page(api, device('v6-dev-3', '2001:db8:7:2::1')).expect(200);
    for (let i = 0; i < 3; i++) await page(api, device(`v4-dev-${i}`, i % 2 ? '::ffff:198.51.100.9' : '198.51.100.9')).expect(200);
    await page(api, device('v4-dev-3', '::ffff:198.51.100.9')).expect(429);
    // What a trusted proxy forwards that is no address at all counts as the proxy's own.
    for (let i = 0; i < 3; i++) await page(api, device(`junk-dev-${i}`, `junk-${i}`)).expect(200);
    await page(api, device('junk-dev-3', 'junk-3')).expect(429);
  });

  it('when no proxy is trusted (the default), then X-Forwarded-For is ignored: distinct forwarded addresses share the peer\'s budget', async () => {
    const api = split.api;
    for (let i = 1; i <= 3; i++) await page(api, device(`spoof-dev-${i}`, `192.0.2.${i}`)).expect(200);
    await page(api, device('spoof-dev-4', '192.0.2.4')).expect(429);
  });

  it('when a new device asks HEAD, then nothing is taken nor recorded', async () => {
    const api = split.api;
    for (let i = 1; i <= 4; i++) await request(api.app).head('/api/app/recommend/vid/list').set(device(`head-dev-${i}`)).expect(200);
    expect(await known('head-dev-1')).toBe(false);
    for (let i = 1; i <= 3; i++) await page(api, device(`head-dev-${i}`)).expect(200);
  });
});
