/**
 * `pnpm bench memory [--users U]`: Redis memory per user for the V1 recent-views window and V3
 * "not interested" marks as stored (4-byte fingerprints), against the alternatives, measured
 * with MEMORY USAGE; plus the offset hash per user.
 */
import { randomBytes } from 'node:crypto';
import { fingerprint } from '@feed/storage';
import { argValue, benchRedis } from './support';

const hexId = () => randomBytes(12).toString('hex');

export async function runMemoryBench(): Promise<void> {
  const window = Number(argValue('views', '200'));
  const marks = Number(argValue('marks', '500'));
  const users = Number(argValue('users', '100000'));
  const { redis, keys, cleanup } = await benchRedis();
  try {
    const ids = Array.from({ length: Math.max(window, marks) }, hexId);
    const measure = async (key: string) => Number(await redis.memoryUsage(key, { SAMPLES: 0 }));
    const rows: Array<[string, number]> = [];

    await redis.set(keys.views('u:fp'), Buffer.concat(ids.slice(0, window).map(fingerprint)));
    rows.push([`views: ${window} x 4-byte fingerprints in a STRING (chosen)`, await measure(keys.views('u:fp'))]);
    await redis.rPush(keys.views('u:list24'), ids.slice(0, window));
    rows.push([`views: ${window} x 24-char ids in a LIST`, await measure(keys.views('u:list24'))]);
    await redis.set(keys.views('u:bin12'), Buffer.concat(ids.slice(0, window).map((id) => Buffer.from(id, 'hex'))));
    rows.push([`views: ${window} x 12-byte binary ids in a STRING`, await measure(keys.views('u:bin12'))]);
    await redis.sAdd(keys.views('u:set24'), ids.slice(0, window));
    rows.push([`views: ${window} x 24-char ids in a SET`, await measure(keys.views('u:set24'))]);
    await redis.set(keys.notInterested('u:fp'), Buffer.concat(ids.slice(0, marks).map(fingerprint)));
    rows.push([`not interested: ${marks} x 4-byte fingerprints (chosen, the bound)`, await measure(keys.notInterested('u:fp'))]);

    // Offsets: one field per user in the version's hash.
    const offsetKey = keys.offset('bench');
    for (let i = 0; i < users; i += 10_000) {
      const fields: Record<string, string> = {};
      for (let j = i; j < Math.min(users, i + 10_000); j++) fields[`u:${1_000_000 + j}`] = String(j % 5000);
      await redis.hSet(offsetKey, fields);
    }
    const offsetBytes = await measure(offsetKey);

    console.log('structure'.padEnd(64), 'bytes');
    for (const [name, bytes] of rows) console.log(name.padEnd(64), bytes);
    console.log(`offset hash: ${users} users`.padEnd(64), offsetBytes, `(${(offsetBytes / users).toFixed(1)} B/user)`);
    console.log(`views_bytes_per_user=${rows[0][1]} not_interested_max_bytes_per_user=${rows[4][1]} offset_bytes_per_user=${(offsetBytes / users).toFixed(1)}`);
  } finally {
    await cleanup();
  }
}
