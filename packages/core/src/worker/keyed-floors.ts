import { ReadyFloor } from './ready-floor.js';

/**
 * A {@link ReadyFloor} per key: per served limit (`LimitFloors`) or per priority of the claim
 * index (`PriorityFloors`). Each key's floor follows the sightings of the claims that read its
 * rows, under the same rules as one floor; a key first seen starts at its range's beginning for
 * a window, as a new worker does. At most `max` keys are kept, the ones seen latest: a key let
 * go is read from its start again, which is always safe.
 * @internal
 */
export class KeyedFloors<K> {
  readonly #windowMs: number;
  readonly #probeEveryMs: number;
  readonly #max: number;
  readonly #beginning: bigint;
  // in the order they were last seen, the latest last
  readonly #floors = new Map<K, ReadyFloor>();

  constructor(windowMs: number, probeEveryMs: number, max = Infinity, beginning = 0n) {
    this.#windowMs = windowMs;
    this.#probeEveryMs = probeEveryMs;
    this.#max = max;
    this.#beginning = beginning;
  }

  /** Each key's floor for the next claim, in the order of `keys`. */
  floors(keys: readonly K[]): string[] {
    return keys.map((key) => this.#of(key).floor());
  }

  /** The keys kept, with their floors for the next claim. */
  entries(): Map<K, string> {
    return new Map([...this.#floors].map(([key, floor]) => [key, floor.floor()]));
  }

  /** The keys kept. */
  keys(): K[] {
    return [...this.#floors.keys()];
  }

  /** What a claim (or probe) sent at `sent` and returned at `at` saw first under each key. */
  saw(sent: number, at: number, first: ReadonlyMap<K, string>): void {
    for (const [key, id] of first) {
      const floor = this.#of(key);
      floor.saw(sent, at, id);
      // seen latest: kept longest
      this.#floors.delete(key);
      this.#floors.set(key, floor);
    }
    for (const key of this.#floors.keys()) {
      if (this.#floors.size <= this.#max) break;
      this.#floors.delete(key);
    }
  }

  /**
   * What a probe sent at `sent` and returned at `at` saw first under each key; whether any of it
   * lay below the floor the next claim would have started at (a row the floor had passed).
   */
  probed(sent: number, at: number, first: ReadonlyMap<K, string>): boolean {
    let below = false;
    for (const [key, id] of first) if (this.below(key, id)) below = true;
    this.saw(sent, at, first);
    return below;
  }

  /** Rows came back from `id` up, under any key: claims start at or below it until they see past them. */
  lowerTo(at: number, id: string): void {
    for (const floor of this.#floors.values()) floor.lowerTo(at, id);
  }

  /** Rows came back with any id: claims start at each key's beginning until they see past them. */
  reset(at: number): void {
    for (const floor of this.#floors.values()) floor.reset(at);
  }

  /** Whether a probe is due for some key (each one due counts as probed now). */
  probeDue(now = performance.now()): boolean {
    let due = false;
    for (const floor of this.#floors.values()) if (floor.probeDue(now)) due = true;
    return due;
  }

  /** Whether `id` lies below the floor the next claim would start `key`'s rows at. */
  below(key: K, id: string): boolean {
    return BigInt(id) < BigInt(this.#of(key).floor());
  }

  #of(key: K): ReadyFloor {
    let floor = this.#floors.get(key);
    if (floor === undefined) {
      floor = new ReadyFloor(this.#windowMs, this.#probeEveryMs, performance.now(), this.#beginning);
      this.#floors.set(key, floor);
    }
    return floor;
  }
}
