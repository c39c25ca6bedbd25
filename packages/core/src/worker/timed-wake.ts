import type { Wakeup } from './wakeup.js';

/**
 * Wakes a claim loop at the next moment something becomes claimable that no notification
 * announces: a rate limit's window that allows the next start (`LeaseClaimResult.waitMs`), a
 * scheduled row, retry or parked run that comes due (`LeaseClaimResult.nextDueMs`, and this
 * worker's own writes of one). One timer, for the earliest moment asked; the claim it causes
 * must look at every source ({@link take}), since a ready-only claim would not see a due row.
 * `clear()` when the loop ends, so that a stopped worker leaves no timer behind.
 * @internal
 */
export class TimedWake {
  readonly #wakeup: Wakeup;
  #timer: NodeJS.Timeout | undefined;
  #at = Infinity;
  #fired = false;

  constructor(wakeup: Wakeup) {
    this.#wakeup = wakeup;
  }

  /** Wake the loop in `ms` (or earlier, if asked so already). */
  in(ms: number): void {
    // a millisecond late rather than early: the window must have moved on, the row come due,
    // when the claim looks (a claim that still finds it early reports it again, and re-arms)
    const at = performance.now() + Math.max(0, ms) + 1;
    if (at >= this.#at) return;
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#at = Infinity;
      this.#fired = true;
      this.#wakeup.wake();
    }, at - performance.now());
    // the loop's own waits keep the process alive while it runs; this never does on its own
    this.#timer.unref();
  }

  /** Whether the timer fired and was not taken yet, or fires within `ms`. */
  within(ms: number): boolean {
    return this.#fired || this.#at - performance.now() <= ms;
  }

  /** Whether the timer fired since the last call: then the next claim must be a whole one. */
  take(): boolean {
    const fired = this.#fired;
    this.#fired = false;
    return fired;
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
    this.#fired = false;
  }
}
