/**
 * Largest automatic buffer of claimed tasks beyond the running ones. Handlers of microseconds
 * reach it; the worker then starts them at its own pace (some 30–50 µs a task), so the buffer
 * still drains well within {@link AUTO_WINDOW_MS}. Twice the largest claim: the buffer refills
 * at half.
 */
export const AUTO_PREFETCH_MAX = 2048;
/**
 * Largest automatic claim; a power of two, so that the claim's plan is reused (see
 * `isClaimSize`). Each claim and each fenced write is a commit: at 256 rows a claim, those
 * commits held a no-op worker to some 20,000 tasks/s, at 1,024 to some 25,000 (bench/RESULTS.md).
 */
export const AUTO_BATCH_MAX = 1024;
/**
 * The automatic buffer holds what the slots start within this window at the observed handler
 * time, so that a buffered task waits at most this long (and never past half a heartbeat
 * interval): enough to hide a claim's round trip, short enough that busy workers do not hoard
 * slow tasks that idle ones could run.
 */
export const AUTO_WINDOW_MS = 100;

/** What a worker holds now, as the sizing sees it. */
export interface Holding {
  /** Handlers running. */
  readonly running: number;
  /**
   * Handlers that lent their slot while they wait for a write of the worker's own: sized as
   * running (lending starts buffered tasks sooner; it does not claim more).
   */
  readonly lent?: number;
  /** Claimed tasks waiting for a slot. */
  readonly buffered: number;
  /** Tasks whose handler is done and whose fenced write is queued or under way. */
  readonly writing: number;
}

/** Settings of a {@link ClaimSizing}, checked by the worker's options. */
export interface ClaimSizingSettings {
  readonly concurrency: number;
  /** How often leases are extended, in ms: a buffered task must start well before that. */
  readonly heartbeatIntervalMs: number;
  /** Fixed buffer (an expert's `prefetch`), or undefined to size it from handler times. */
  readonly prefetch: number | undefined;
  /** Fixed most rows per claim (an expert's `batch`), or undefined to size it. */
  readonly batch: number | undefined;
  /** Upper bound of the automatic buffer. */
  readonly maxPrefetch: number;
}

/**
 * Decides how many tasks a worker claims and when. Without `prefetch` and `batch` it sizes both
 * itself: the buffer holds what the slots start within {@link AUTO_WINDOW_MS} (at most half a
 * heartbeat interval) at the handlers' observed duration (a moving average), so no buffered task
 * waits for a slot long enough to need a heartbeat; until a handler has finished it claims only
 * for free slots. Claims are powers of two up to {@link AUTO_BATCH_MAX}. Either way it claims
 * only when a slot is free with nothing buffered, or the buffer has run down to half (not for
 * every freed slot: each claim statement costs a round trip and a fixed share of the server's
 * time), and never while fenced writes lag behind by more than a full buffer.
 * @internal
 */
export class ClaimSizing {
  readonly #s: ClaimSizingSettings;
  readonly #windowMs: number;
  /** Moving average of handler durations in ms; undefined until one finished. */
  #handlerMs: number | undefined;

  constructor(settings: ClaimSizingSettings) {
    this.#s = settings;
    this.#windowMs = Math.min(AUTO_WINDOW_MS, settings.heartbeatIntervalMs / 2);
  }

  /** A handler ran for `ms`. */
  observe(ms: number): void {
    // a sixteenth per task: a few slow tasks shrink the buffer within a few dozen tasks
    this.#handlerMs = this.#handlerMs === undefined ? ms : this.#handlerMs + (ms - this.#handlerMs) / 16;
  }

  /** Claimed tasks to keep beyond the running ones. */
  get prefetch(): number {
    if (this.#s.prefetch !== undefined) return this.#s.prefetch;
    if (this.#handlerMs === undefined) return 0;
    const perWindow = (this.#s.concurrency * this.#windowMs) / Math.max(this.#handlerMs, 0.001);
    return Math.min(this.#s.maxPrefetch, Math.floor(perWindow));
  }

  /** Claim when the buffer is down to this many (a free slot with an empty buffer claims too). */
  get lowWater(): number {
    return Math.floor(this.prefetch / 2);
  }

  /**
   * How many more tasks the worker can hold now (slots and buffer), whatever the buffer's
   * low-water mark: what a write that finishes ordered rows may take of their next heads.
   */
  room(h: Holding): number {
    const running = h.running + (h.lent ?? 0);
    const lagging = Math.max(0, h.writing - (this.#s.concurrency + this.prefetch));
    return Math.max(0, this.#s.concurrency + this.prefetch - running - h.buffered - lagging);
  }

  /** How many to claim now: 0 for none yet. */
  want(h: Holding): number {
    const { concurrency } = this.#s;
    const prefetch = this.prefetch;
    const running = h.running + (h.lent ?? 0);
    const slotFree = running < concurrency && h.buffered === 0;
    if (!slotFree && h.buffered > Math.floor(prefetch / 2)) return 0;
    // writes queued beyond a full buffer hold capacity: claims must not outrun the fenced
    // writes, or leases would run out unwritten
    const lagging = Math.max(0, h.writing - (concurrency + prefetch));
    const room = concurrency + prefetch - running - h.buffered - lagging;
    if (room <= 0) return 0;
    if (this.#s.batch !== undefined) return Math.min(room, this.#s.batch);
    return floorPowerOfTwo(Math.min(room, AUTO_BATCH_MAX));
  }
}

function floorPowerOfTwo(n: number): number {
  return 2 ** Math.floor(Math.log2(n));
}
