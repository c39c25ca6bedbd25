import { DUE_BEGINNING, type DueSource } from '../sql/lease-claim.js';
import { KeyedFloors } from './keyed-floors.js';

/**
 * How long before it enters its source a row's due time may have been taken, in ms, and the row
 * still never be passed by the due floors; later ones wait for the floors' probe. Longer than the
 * ready floors' second: a due time is written from a transaction's `now()` (its start), a retry's
 * from its write's, a sleep's from the call, each some way ahead of the commit that makes the row
 * visible. What it costs is the index entries of this long's rows, read by each claim.
 */
export const DUE_FLOOR_WINDOW_MS = 5_000;

/**
 * Where the whole claim starts reading the rows it finds by due time
 * (`LeaseClaimInput.dueFloors`): the scheduled rows that came due (`'due'`: retries, deferrals,
 * tasks enqueued with a start time, woken runs) and the parked runs due to wake (`'parked'`:
 * sleeps, waits' deadlines). Each claim moves the rows it takes out of the index it found them
 * in, so while a long transaction elsewhere holds vacuum back both indexes keep an entry per row
 * that went through, and a claim that reads from the start visits them all (docs/operations.md,
 * "Long transactions elsewhere"). The same rules as the ready floors (`ReadyFloor`), by due time
 * instead of id: a row enters either source with a due time at most the window before it commits,
 * except
 * - runs a claim woke for others (another worker's names, or past its batch), which go back to
 *   the scheduled rows with the times they came due: a claim of this worker's that woke some
 *   counts them as seen among the scheduled rows (`LeaseClaimResult.dueFirst`), so its claims
 *   read from there for the window;
 * - scheduled rows of ordering groups that this worker's writes unblock: the same;
 * - those that the probe finds (another worker's wakes and unblocks, a transaction that commits
 *   long after it began): once per poll interval, that is their bound, as for the ready floors.
 * @internal
 */
export class DueFloors {
  // a position '<µs>:<id>' kept as one bigint that orders as the index does: µs · 2^64 + id
  readonly #floors: KeyedFloors<DueSource>;

  constructor(probeEveryMs: number) {
    this.#floors = new KeyedFloors<DueSource>(DUE_FLOOR_WINDOW_MS, probeEveryMs, Infinity, BigInt(toKey(DUE_BEGINNING)));
  }

  /** The floors for the next claim, as `LeaseClaimInput.dueFloors` takes them. */
  entries(): Map<DueSource, string> {
    return new Map([...this.#floors.entries()].map(([source, key]) => [source, toPosition(key)]));
  }

  /** What a claim (or probe) sent at `sent` and returned at `at` saw first in each source. */
  saw(sent: number, at: number, first: ReadonlyMap<DueSource, string>): void {
    this.#floors.saw(sent, at, keys(first));
  }

  /** A probe's sightings; whether any lay below the floor the next claim would have started at. */
  probed(sent: number, at: number, first: ReadonlyMap<DueSource, string>): boolean {
    return this.#floors.probed(sent, at, keys(first));
  }

  /** Rows came back with any due time: claims start at each source's beginning until they see past them. */
  reset(at: number): void {
    this.#floors.reset(at);
  }

  /** Whether a probe is due (see `ReadyFloor.probeDue`). */
  probeDue(now = performance.now()): boolean {
    return this.#floors.probeDue(now);
  }
}

const SHIFT = 64n;
const ID_MASK = (1n << SHIFT) - 1n;

function toKey(position: string): string {
  const at = position.indexOf(':');
  return String((BigInt(position.slice(0, at)) << SHIFT) + BigInt(position.slice(at + 1)));
}

function toPosition(key: string): string {
  const k = BigInt(key);
  // >> rounds toward minus infinity, so a due time before the epoch keeps its id as the low bits
  return `${k >> SHIFT}:${k & ID_MASK}`;
}

function keys(positions: ReadonlyMap<DueSource, string>): Map<DueSource, string> {
  return new Map([...positions].map(([source, position]) => [source, toKey(position)]));
}
