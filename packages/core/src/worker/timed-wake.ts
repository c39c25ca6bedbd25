import type { Wakeup } from './wakeup.js';

/**
 * Whole claims also take the scheduled rows and sleeping runs that come due within this many ms
 * (`LeaseClaimInput.aheadMs`), and the runner starts each at its time. Claimed once due, a row
 * would start at its time plus the timer's millisecond plus a claim's round trip (5–10 ms on a
 * loaded machine, more behind a claim already under way).
 * @internal
 */
export const CLAIM_AHEAD_MS = 20;

/**
 * For a row that comes due past {@link CLAIM_AHEAD_MS}, the timer fires this many ms before its
 * time, so that the claim it sends reaches the server with the row inside the look ahead: less
 * than `CLAIM_AHEAD_MS` by more than a claim's usual round trip.
 */
const AHEAD_LEAD_MS = 10;

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

  /**
   * Wake the loop for a row that comes due in `ms` (`elapsed` of them passed already): early
   * enough for its claim to take it ahead of its time ({@link CLAIM_AHEAD_MS}). A row already
   * within the look ahead that a claim left (a wait a signal may end sooner, another claim's
   * lock) is claimed once due.
   */
  dueIn(ms: number, elapsed = 0): void {
    this.in((ms > CLAIM_AHEAD_MS ? ms - AHEAD_LEAD_MS : ms) - elapsed);
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
