/**
 * How many times its own duration a floor's probe (or an idle worker's claim from the start, which
 * reads the same) waits before the next one may go out. A probe reads its index from the start
 * (see `ReadyFloor`): with a long transaction elsewhere holding the horizon for hours that is
 * millions of entries, and once per poll interval it would keep a backend busy for much of the
 * time. Spaced so, a probe takes at most about a tenth of one backend; the bound of a row the
 * floors passed becomes the poll interval or ten times a probe's duration, whichever is longer.
 */
export const PROBE_COST_SPACING = 10;

/**
 * When the next probe of one kind may go out, after the last one's duration (see
 * {@link PROBE_COST_SPACING}). Times are `performance.now()`.
 * @internal
 */
export class ProbeSpacing {
  #notBefore = -Infinity;

  /** A probe sent at `sent` returned at `at`. */
  ran(sent: number, at: number): void {
    this.#notBefore = at + PROBE_COST_SPACING * Math.max(0, at - sent);
  }

  /** Whether a probe may go out at `now`. */
  allowed(now = performance.now()): boolean {
    return now >= this.#notBefore;
  }
}
