/**
 * Where a worker's claims of priority-0 rows start in the claim index (`LeaseClaimInput.readyFloor`).
 *
 * A claim moves its rows out of the claim index's predicate, so each leaves an index entry
 * behind that only vacuum removes, and vacuum cannot while any transaction in the database is
 * older than the row's claim (an analytics session, a forgotten `BEGIN`). A claim that starts at
 * the index's beginning walks all those entries, and with the horizon held for minutes that is
 * tens of thousands of heap visits per claim. Starting at a floor skips them.
 *
 * The floor must never pass a row that can still be taken. Rows enter the claim index by INSERT
 * only, with a new id, except where this worker unblocks the next row of an ordering group (see
 * {@link reset}), and a few rare paths the {@link ReadyFloor.probe} covers (another worker's
 * unblock of a row only this worker takes). Every other way back to `pending` (a retry, a
 * release, a signal, a child's end, a dead task retried) goes through the scheduled rows
 * (`task_due`), which the floor does not touch. An INSERT's id is taken before it commits, so
 * a claim can run between the two and not see it: the floor is the lowest position any claim
 * saw in the last `windowMs` and the one before, so a row that commits within `windowMs` of its
 * insert is never skipped. A row committed later (a producer that keeps its transaction open),
 * or unblocked by another worker, is found by the probe, a read-only scan from the index's
 * start that runs beside the claims once per `probeEveryMs`: that is its bound.
 * @internal
 */
export class ReadyFloor {
  readonly #windowMs: number;
  readonly #probeEveryMs: number;
  /** What claims saw: when their snapshot was taken, and the lowest candidate of priority 0. */
  #seen: { at: number; id: bigint }[] = [];
  #probedAt: number;

  constructor(windowMs: number, probeEveryMs: number, now = performance.now()) {
    this.#windowMs = windowMs;
    this.#probeEveryMs = probeEveryMs;
    this.#probedAt = now;
  }

  /** The floor for a claim sent now, as the claim's bigint text. */
  floor(now = performance.now()): string {
    this.#trim(now);
    let low: bigint | undefined;
    for (const s of this.#seen) if (low === undefined || s.id < low) low = s.id;
    return low === undefined ? '0' : String(low);
  }

  /**
   * A claim (or probe) that returned at `at` saw `first` as its lowest candidate of priority 0.
   * The time it returned, not when it was sent: its snapshot lies between the two, and a
   * sighting taken for later than it was only stays counted longer.
   */
  saw(at: number, first: string): void {
    this.#add({ at, id: BigInt(first) });
  }

  /**
   * This worker's writes unblocked rows of ordering groups (any id, however old): claims start
   * at the index's beginning until they have seen past them.
   */
  reset(at: number): void {
    this.#add({ at, id: 0n });
  }

  // in time order: a probe returns after claims sent later than it
  #add(sighting: { at: number; id: bigint }): void {
    let i = this.#seen.length;
    while (i > 0 && this.#seen[i - 1]!.at > sighting.at) i--;
    this.#seen.splice(i, 0, sighting);
  }

  /** Whether a probe is due: the floor is above the index's beginning and the last is old. */
  probeDue(now = performance.now()): boolean {
    if (now - this.#probedAt < this.#probeEveryMs || this.floor(now) === '0') return false;
    this.#probedAt = now;
    return true;
  }

  // Keeps what was seen since `now - windowMs`, and the latest sighting before that.
  #trim(now: number): void {
    const edge = now - this.#windowMs;
    let drop = 0;
    while (drop + 1 < this.#seen.length && this.#seen[drop + 1]!.at <= edge) drop++;
    if (drop > 0) this.#seen = this.#seen.slice(drop);
  }
}
