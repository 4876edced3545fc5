/**
 * One page's claims on a user's ring (SPEC R11), within the request's Redis deadline. A page that
 * cannot be completed gives every claim back before answering (`giveBackAll`); a claim answered
 * after the request stopped waiting is given back when it arrives: positions are consumed only when
 * served, decided by no clock but the API's timer. What could not be given back counts as lost.
 */
import { NotDurableError, RedisCallError, withDeadline, type Claim, type Deadline, type RingVersion } from '@feed/storage';
import { inSpan } from '@feed/telemetry';
import type { FeedDeps } from './feed-service';
import type { Positions } from './ring-scan';

/** The published queue is shorter than its meta says: the version is gone. */
export class QueueGoneError extends Error {}

/** The feed's stores, reader and metrics; one user's ring; the request's Redis deadline (no claim is sent past it just to be given back). */
export type RingClaimsOptions = Pick<FeedDeps, 'versions' | 'reader' | 'metrics'> & { ring: RingVersion; userKey: string; deadline: Deadline };

export class RingClaims implements Positions {
  private readonly claims: Claim[] = [];

  constructor(private readonly o: RingClaimsOptions) {}

  /** Claims the next `count` positions; null when a later step fails (what was claimed is served). */
  async take(count: number, scanned: number) {
    const { ring, deadline, reader } = this.o;
    try {
      const claim = await this.claim(count);
      // The instance's copy answers at once; Redis (until it is loaded) within the deadline.
      const ids = reader.copies?.idsAt(ring, claim.offset, claim.count) ?? await deadline.run(() => reader.idsAt(ring, claim.offset, claim.count), 'queue read').catch((err: unknown) => {
        // Claimed but not readable (Redis failed between the two calls): not served, so given back.
        void this.giveBack([claim], false);
        throw err;
      });
      this.claims.push(claim);
      if (ids.length < claim.count) throw new QueueGoneError(`queue of version ${ring.version} is gone`);
      return { start: claim.offset, ids };
    } catch (err) {
      // Positions already claimed are this user's: serve them rather than drop them.
      if (scanned > 0 && err instanceof RedisCallError) return null;
      throw err;
    }
  }

  /** Every claim of the page, latest first, given back before its answer within a deadline of its own (the request's may be spent). */
  giveBackAll(): Promise<void> {
    return this.giveBack(this.claims.splice(0).reverse(), true);
  }

  private async claim(count: number): Promise<Claim> {
    const { versions, ring, userKey, deadline } = this.o;
    let claiming: Promise<Claim> | undefined;
    try {
      return await deadline.run(() => inSpan('ring claim', { 'feed.version': ring.version, 'feed.count': count }, () => (claiming = versions.claim(ring, userKey, count))), 'ring claim');
    } catch (err) {
      if (claiming && err instanceof RedisCallError) void this.giveBackWhenAnswered(claiming);
      throw err;
    }
  }

  /** A claim given up on is given back if it ran (unconfirmed ones too, over the claiming connection). */
  private async giveBackWhenAnswered(claiming: Promise<Claim>): Promise<void> {
    const answered = await claiming.then(
      (claim) => ({ claim, late: true, still: () => true }),
      (err: unknown) => (err instanceof NotDurableError && err.written ? { claim: err.written.reply as Claim, late: false, still: err.written.still } : undefined),
    );
    // No answer: Redis is gone and the claim most likely never ran; nothing to give back. Nor when the connection that claimed is gone.
    if (!answered || answered.claim.count === 0 || !answered.still()) return;
    // Counted apart from Redis failures: the claim ran, its answer came after the request's deadline.
    if (answered.late) this.o.metrics.lateClaims.inc();
    await this.giveBack([answered.claim], false);
  }

  /** `bounded`: before a page's answer; otherwise no request waits (a late answer, a background give-back). */
  private async giveBack(claims: Claim[], bounded: boolean): Promise<void> {
    const { versions, ring, userKey, deadline, metrics } = this.o;
    const given = Promise.all(claims.map((claim) => versions.unclaim(ring, userKey, claim)));
    const unserved = await (bounded ? withDeadline(given, deadline.ms, 'give-back') : given).catch(() => claims.map((claim) => claim.count));
    for (const lost of unserved) metrics.claimsGivenBack.inc({ result: lost === 0 ? 'given-back' : 'lost' });
  }
}
