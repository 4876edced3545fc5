/**
 * Up to `limit` writes in flight, settled in order. A failure surfaces at the next `add` or `drain`;
 * the writes still out are observed, so their failures never become unhandled rejections (which
 * would end the worker, not fail the build).
 */
export class InFlight {
  private readonly pending: Array<{ sent: Promise<unknown>; settled?: () => void | Promise<void> }> = [];

  constructor(private readonly limit: number) {}

  /** Adds a sent write; waits for the oldest when `limit` are in flight. `settled` runs after its write, in order. */
  async add(sent: Promise<unknown>, settled?: () => void | Promise<void>): Promise<void> {
    sent.catch(() => undefined);
    this.pending.push({ sent, settled });
    if (this.pending.length >= this.limit) await this.settleOldest();
  }

  /** Waits for every write still in flight. */
  async drain(): Promise<void> {
    while (this.pending.length > 0) await this.settleOldest();
  }

  private async settleOldest(): Promise<void> {
    const { sent, settled } = this.pending.shift()!;
    await sent;
    await settled?.();
  }
}
