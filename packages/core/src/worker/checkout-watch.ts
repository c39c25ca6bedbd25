/** One wait for a pool connection, from the call until a client took the statement. */
export interface Checkout {
  readonly since: number;
  reported: boolean;
}

/** A wait for a pool connection that outlasted the bound. */
export interface LongCheckout {
  /** How long the longest waiting statement has waited so far, in ms. */
  readonly waitedMs: number;
  /** The worker's statements waiting for a connection now. */
  readonly waiting: number;
  /** The pool's own counts, when it reports them (a `pg` pool does). */
  readonly pool: PoolCounts | undefined;
  /** True for the first report of an episode (no wait had outlasted the bound just before). */
  readonly first: boolean;
}

/** What a `pg` pool says about its connections. */
export interface PoolCounts {
  /** Its `max`. */
  readonly max: number | undefined;
  /** Connections open (checked out or idle). */
  readonly total: number;
  readonly idle: number;
  /** Checkouts of anyone (handlers included) waiting for a connection. */
  readonly waiting: number;
}

/** What the watch calls. */
export interface CheckoutWatchOptions {
  /** A checkout waiting longer than this is reported, in ms. */
  readonly boundMs: number;
  /** Called when checkouts newly outlast the bound (at most once per check, every half bound). */
  readonly onLong: (wait: LongCheckout) => void;
  /** Called when no checkout has outlasted the bound any more, after an episode; `ms` is its length. */
  readonly onClear: (ms: number) => void;
  /** The pool's counts now, if it has any. */
  readonly counts: () => PoolCounts | undefined;
}

/**
 * Watches the worker's waits for pool connections (docs/design.md §9, invariant 12: nothing hangs silently).
 * When handlers hold every connection of the pool, the worker's claims, heartbeats and fenced
 * writes wait in the pool's queue without a word; the watch reports each wait that outlasts the
 * bound, and the end of such an episode. It checks on a timer of its own (every half bound), so
 * a wait is reported between one and one and a half bounds after it began; the hot path only
 * adds and removes set entries.
 * @internal
 */
export class CheckoutWatch {
  readonly #o: CheckoutWatchOptions;
  readonly #waiting = new Set<Checkout>();
  #timer: NodeJS.Timeout | undefined;
  /** When the episode in progress began (`performance.now()`), if one is. */
  #episode: number | undefined;

  constructor(options: CheckoutWatchOptions) {
    this.#o = options;
  }

  /** A checkout begins; pass the result to {@link end} when a client took it (or it failed). */
  begin(): Checkout {
    const checkout = { since: performance.now(), reported: false };
    this.#waiting.add(checkout);
    return checkout;
  }

  end(checkout: Checkout): void {
    this.#waiting.delete(checkout);
  }

  start(): void {
    this.#timer ??= setInterval(() => this.#sweep(), Math.max(5, this.#o.boundMs / 2));
    // the watch alone must not keep a process alive
    this.#timer.unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#waiting.clear();
    this.#episode = undefined;
  }

  #sweep(): void {
    const now = performance.now();
    let longest = 0;
    let fresh = false;
    for (const checkout of this.#waiting) {
      const waited = now - checkout.since;
      if (waited < this.#o.boundMs) continue;
      longest = Math.max(longest, waited);
      if (!checkout.reported) fresh = checkout.reported = true;
    }
    if (longest === 0) {
      if (this.#episode !== undefined) this.#o.onClear(now - this.#episode);
      this.#episode = undefined;
      return;
    }
    if (!fresh) return;
    const first = this.#episode === undefined;
    this.#episode ??= now - longest;
    this.#o.onLong({ waitedMs: Math.round(longest), waiting: this.#waiting.size, pool: this.#o.counts(), first });
  }
}
