/** A card the fake service refuses, like a real one would answer "do not honour". */
export const DECLINED_CARD = '4000-0000-0000-0002';

export class CardDeclinedError extends Error {}

interface Charge {
  readonly chargeId: string;
  readonly orderId: string;
  readonly amountCents: number;
  refunded: boolean;
}

/**
 * A stand-in for a payment provider, in memory. Like Stripe's `Idempotency-Key`, a repeated call
 * with a key it has seen returns the first answer instead of charging again: the workflow passes
 * `task id + step name`, which is the same on every run of the step, so a step that ran but whose
 * record was lost (a crash, a dropped reply) charges once however often it runs.
 */
export class FakePayments {
  readonly #charges = new Map<string, Charge>();
  /** Every charge request, repeats included: more calls than charges means the key did its job. */
  calls = 0;

  async charge(key: string, orderId: string, amountCents: number, card: string): Promise<{ chargeId: string }> {
    this.calls++;
    const seen = this.#charges.get(key);
    if (seen) return { chargeId: seen.chargeId };
    if (card === DECLINED_CARD) throw new CardDeclinedError(`card ending ${card.slice(-4)} declined`);
    const charge = { chargeId: `ch_${this.#charges.size + 1}`, orderId, amountCents, refunded: false };
    this.#charges.set(key, charge);
    return { chargeId: charge.chargeId };
  }

  /** Refunds the charge made under `key`; refunding twice is a no-op, like the provider's. */
  async refund(key: string): Promise<{ refunded: boolean }> {
    const charge = this.#charges.get(key);
    if (charge) charge.refunded = true;
    return { refunded: charge !== undefined };
  }

  chargesOf(orderId: string): Charge[] {
    return [...this.#charges.values()].filter((c) => c.orderId === orderId);
  }
}
