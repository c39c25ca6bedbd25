import type { Wakeup } from './wakeup.js';

/**
 * Wakes a claim loop when a rate limit's window next allows a start (the claim says in how many
 * ms, see `LeaseClaimResult.waitMs`): tasks held back by a rate wait without polling, and no
 * notification would come for them. One timer, for the earliest moment asked; `clear()` when the
 * loop ends, so that a stopped worker leaves no timer behind.
 * @internal
 */
export class RateWake {
  readonly #wakeup: Wakeup;
  #timer: NodeJS.Timeout | undefined;
  #at = Infinity;

  constructor(wakeup: Wakeup) {
    this.#wakeup = wakeup;
  }

  /** Wake the loop in `ms` (or earlier, if asked so already). */
  in(ms: number): void {
    // a millisecond late rather than early: the window must have moved on when the claim looks
    const at = performance.now() + Math.max(0, ms) + 1;
    if (at >= this.#at) return;
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#at = Infinity;
      this.#wakeup.wake();
    }, at - performance.now());
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }
}
