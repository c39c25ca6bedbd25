/**
 * Where a worker's claims of one priority's rows start in the claim index
 * (`LeaseClaimInput.readyFloors`; the worker keeps one per priority its claims take, `PriorityFloors`).
 *
 * A claim moves its rows out of the claim index's predicate, so each leaves an index entry
 * behind that only vacuum removes, and vacuum cannot while any transaction in the database is
 * older than the row's claim (an analytics session, a forgotten `BEGIN`). A claim that starts at
 * the index's beginning walks all those entries, and with the horizon held for minutes that is
 * tens of thousands of heap visits per claim. Starting at a floor skips them.
 *
 * The floor must never pass a row that can still be taken. Rows enter the claim index by INSERT
 * only, with a new id, except where this worker unblocks the next row of an ordering group (see
 * {@link lowerTo}), and a few rare paths the probe (`readyFloorProbe`, below) covers (another worker's
 * unblock of a row only this worker takes). Every other way back to `pending` (a retry, a
 * release, a signal, a child's end, a dead task retried) goes through the scheduled rows
 * (`task_due`), which the floor does not touch. An INSERT's id is taken before it commits, so
 * a claim can run between the two and not see it: the floor is the lowest position the claims
 * saw within `windowMs` of the latest sighting, and the one before, so a row that commits within
 * `windowMs` of its insert is never skipped. A row committed later (a producer that keeps its transaction open),
 * or unblocked by another worker, is found by the probe once per `probeEveryMs`: that is its
 * bound. A busy worker runs it beside its claims, as a read-only scan from the index's start; an
 * idle one sends its next claim from the index's start instead (no statement more per poll).
 * @internal
 */
export class ReadyFloor {
  readonly #windowMs: number;
  readonly #probeEveryMs: number;
  /**
   * What claims saw, in the order they returned: when each was sent and returned (its snapshot
   * lies between), and its lowest candidate of this priority. Starts with the index's beginning,
   * as if seen before anything: rows whose INSERT came before the first claim are below no floor.
   */
  #seen: { sent: number; at: number; id: bigint }[];
  #probedAt: number;
  readonly #beginning: bigint;

  /** `beginning`: the key below every row's (ids start above 0; a due time's key may be below the epoch). */
  constructor(windowMs: number, probeEveryMs: number, now = performance.now(), beginning = 0n) {
    this.#windowMs = windowMs;
    this.#probeEveryMs = probeEveryMs;
    this.#probedAt = now;
    this.#beginning = beginning;
    this.#seen = [{ sent: -Infinity, at: -Infinity, id: beginning }];
  }

  /**
   * The floor for the next claim, as the claim's bigint text: the lowest of the sightings that
   * returned within `windowMs` before the latest one was sent, and the latest that returned
   * before that. Counted from the latest sighting, not from now: a row that took its id before
   * the latest claim and committed after it is covered however long the worker then waits before
   * its next claim (an INSERT that took its id after a sighting's snapshot has a higher id).
   */
  floor(): string {
    this.#trim();
    let low: bigint | undefined;
    for (const s of this.#seen) if (low === undefined || s.id < low) low = s.id;
    return String(low ?? this.#beginning);
  }

  /** A claim (or probe) sent at `sent` and returned at `at` saw `first` as its lowest candidate of this priority. */
  saw(sent: number, at: number, first: string): void {
    this.#add({ sent, at, id: BigInt(first) });
  }

  /**
   * Rows came back with any id, however old (rows under a limit that came due; an ordering
   * group's next row that is scheduled): claims start at the index's beginning until they have
   * seen past them.
   */
  reset(at: number): void {
    this.#add({ sent: at, at, id: this.#beginning });
  }

  /**
   * This worker's writes unblocked rows of ordering groups from `id` up (an old id, it may be):
   * claims start at or below it until they have seen past them.
   */
  lowerTo(at: number, id: string): void {
    this.#add({ sent: at, at, id: BigInt(id) });
  }

  /** Whether a probe is due: the floor is above the index's beginning and the last is old. */
  probeDue(now = performance.now()): boolean {
    if (now - this.#probedAt < this.#probeEveryMs || this.floor() === String(this.#beginning)) return false;
    this.#probedAt = now;
    return true;
  }

  // in the order they returned: a probe returns after claims sent later than it
  #add(sighting: { sent: number; at: number; id: bigint }): void {
    let i = this.#seen.length;
    while (i > 0 && this.#seen[i - 1]!.at > sighting.at) i--;
    this.#seen.splice(i, 0, sighting);
  }

  // Keeps the sightings that returned since `windowMs` before the latest was sent, and the last
  // one that returned before that (its snapshot came before every id taken since the edge).
  #trim(): void {
    const edge = this.#seen[this.#seen.length - 1]!.sent - this.#windowMs;
    let drop = 0;
    while (drop + 1 < this.#seen.length && this.#seen[drop + 1]!.at < edge) drop++;
    if (drop > 0) this.#seen = this.#seen.slice(drop);
  }
}
