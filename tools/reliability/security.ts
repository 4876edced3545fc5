/** Group `security`: the admin surfaces closed, a user unable to touch another's state, and (after the fault checks) no secret in any log. */
import jwt from 'jsonwebtoken';
import { expect, type Suite } from './suite';

export async function accessChecks(suite: Suite): Promise<void> {
  const { api, check, current, keys, offsetOf, queue, redisClient, token, worker } = suite;
  await check('security', 'admin surfaces answer 401 without credentials', async () => {
    const urls = [`${api}/api/admin/explain?user=x`, `${worker}/admin/queues/`, `${worker}/admin/queues/api/queues`, `${worker}/admin/inspector/`, `${worker}/admin/inspector/api/summary`];
    for (const url of urls) {
      const res = await fetch(url);
      expect(res.status === 401, `${url} answered ${res.status}`);
      const withUserToken = await fetch(url, { headers: { Authorization: `Bearer ${token('someone')}` } });
      expect(withUserToken.status === 401, `${url} with a user token answered ${withUserToken.status}`);
    }
    return `${urls.length} surfaces`;
  });

  await check('security', 'a user can never read or move another user\'s offset or history', async () => {
    const victim = 'victim-user';
    await fetch(`${api}/api/app/recommend/vid/list`, { headers: { Authorization: `Bearer ${token(victim)}` } });
    const offsetBefore = await offsetOf(current, `u:${victim}`);
    const historyBefore = await redisClient.exists(keys.views(`u:${victim}`));
    const forged = jwt.sign({ sub: victim }, 'not-the-secret', { algorithm: 'HS256' });
    const [, payload] = token('attacker').split('.');
    const tampered = token('attacker').replace(payload, Buffer.from(JSON.stringify({ sub: victim })).toString('base64url'));
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: victim })).toString('base64url')}.`;
    for (const bad of [forged, tampered, none, token(victim, { expiresIn: -10 })]) {
      for (const [method, url, body] of [
        ['GET', `${api}/api/app/recommend/vid/list`, undefined],
        ['POST', `${api}/api/app/vid/view`, JSON.stringify({ vid: queue[5] })],
      ] as const) {
        const res = await fetch(url, { method, headers: { Authorization: `Bearer ${bad}`, 'X-Device-Id': 'victim-device', 'Content-Type': 'application/json' }, body });
        expect(res.status === 401, `${method} ${url} with a bad token answered ${res.status}`);
      }
    }
    // An attacker's own token with the victim's id in headers or query moves only the attacker.
    await fetch(`${api}/api/app/recommend/vid/list?user=${victim}&uid=${victim}`, { headers: { Authorization: `Bearer ${token('attacker')}`, 'X-User-Id': victim } });
    expect((await offsetOf(current, `u:${victim}`)) === offsetBefore, 'victim offset moved');
    expect((await redisClient.exists(keys.views(`u:${victim}`))) === historyBefore, 'victim history changed');
    return 'forged, tampered, alg=none and expired tokens refused';
  });
}

/** Run late: the logs of every process the suite started until then are scanned. */
export async function secretsChecks(suite: Suite): Promise<void> {
  const { adminPassword, check, processes, token } = suite;
  await check('security', 'secrets never appear in logs', async () => {
    const logs = [...processes.flatMap((p) => p.output)].join('');
    for (const secret of [suite.secret, adminPassword, token('load-user-0').split('.')[2]]) expect(!logs.includes(secret), 'a secret or token was logged');
    return `${(logs.length / 1024).toFixed(0)} KB of logs scanned`;
  });
}
