/**
 * A guest device's record in its bucket (guest-devices.ts, lua/guest-record.lua; SPEC V1, R23,
 * issue 52) against a model, over programs fast-check draws: sights and views of several devices
 * sharing one bucket while the hours pass. After every command the reply (the readout's admission,
 * first seen) and what a page reads (the recent views) equal the model's; records lapse past the
 * views' expiry and start again as new devices.
 */
import fc from 'fast-check';
import { fingerprint, guestSlot, readGuest, recordGuestView, registerGuest } from '../src';
import { useTestServices } from '../../../test/support/services';

const s = useTestServices('guest-devices');
const seed = process.env.CI ? 52 : Date.now() % 2 ** 31;
console.log(`guest-devices.test.ts fast-check seed ${seed}`);

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 6, 24, 0, 30);
const OPTIONS = { ttlMs: 5 * HOUR, maxViews: 3, hourlyCap: 2 };
const vid = (v: number) => v.toString(16).padStart(24, '0');

type Device = { first: number; last: number; capHour: number; capCount: number; views: number[] };
type Command = { device: number; video: number | null; hours: number };

/** The record as the model says it is after `command` at `hour`, and the reply it gives. */
function step(model: Map<number, Device>, { device, video }: Command, hour: number): { admitted: number; first: number } {
  const before = model.get(device);
  const record: Device = before && before.last + 5 >= hour ? before : { first: hour, last: hour, capHour: hour, capCount: 0, views: [] };
  let admitted = 0;
  if (video !== null) {
    const seen = record.views.includes(video);
    record.views = [...record.views.filter((v) => v !== video), video].slice(-OPTIONS.maxViews);
    if (!seen) {
      if (record.capHour !== hour) [record.capHour, record.capCount] = [hour, 0];
      record.capCount += 1;
      admitted = record.capCount > OPTIONS.hourlyCap ? -1 : record.capCount === 1 ? 1 : 2;
    }
  }
  record.last = hour;
  model.set(device, record);
  return { admitted, first: record.first };
}

describe('a guest device\'s record (issue 52)', () => {
  it('when devices sharing a bucket see and view videos over the hours, then replies and recent views follow the model (generative)', async () => {
    const command = fc.record({ device: fc.integer({ min: 0, max: 3 }), video: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }), hours: fc.constantFrom(0, 0, 0, 1, 2, 7) });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 40 }), async (commands) => {
        run += 1;
        // One bucket for all: the sweep of lapsed records runs among them.
        const slot = (d: number) => guestSlot(s.keys, 1, `g:run-${run}-device-${d}`);
        const model = new Map<number, Device>();
        let hour = Math.floor(T0 / HOUR);
        for (const c of commands) {
          hour += c.hours;
          const now = new Date(hour * HOUR + 30 * 60_000);
          const reply = c.video === null ? await registerGuest(s.redis, slot(c.device), OPTIONS, now) : await recordGuestView(s.redis, slot(c.device), fingerprint(vid(c.video)), OPTIONS, now);
          const expected = step(model, c, hour);
          expect({ admitted: reply.admitted, first: reply.firstSeen.getTime() / HOUR }).toEqual(expected);
          for (const [d, device] of model) {
            const read = await readGuest(s.redis, slot(d), OPTIONS.ttlMs, now);
            const live = device.last + 5 >= hour;
            expect({ d, views: read?.views ?? null, first: read ? read.firstSeen.getTime() / HOUR : null }).toEqual({ d, views: live ? Buffer.concat(device.views.map((v) => fingerprint(vid(v)))) : null, first: live ? device.first : null });
          }
        }
        expect(await s.redis.pTTL(slot(0).key)).toBeGreaterThan(0);
      }),
      { seed, numRuns: 60 },
    );
  });
});
