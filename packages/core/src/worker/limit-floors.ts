import { ReadyFloor } from './ready-floor.js';

/**
 * A {@link ReadyFloor} per served limit: where the worker's claims start reading each limit's
 * ready rows of key '' and priority 0 (`LeaseClaimInput.flowFloors`), so that a claim under a
 * limit skips the index entries of the limit's rows claimed before, as the unlimited claim does
 * (docs/operations.md, "Long transactions elsewhere"). The same rules as the unlimited floor,
 * and one more: rows scheduled under a limit (a retry, a release, a wake) come back into the
 * limit's ready rows with their old ids when a claim promotes them, so a claim that promoted
 * some ({@link reset}) sends the claims after it from each limit's start. Another worker's
 * promotions are taken by that worker's next claim, or found by the probe.
 * @internal
 */
export class LimitFloors {
  readonly #windowMs: number;
  readonly #probeEveryMs: number;
  readonly #floors = new Map<string, ReadyFloor>();

  constructor(windowMs: number, probeEveryMs: number) {
    this.#windowMs = windowMs;
    this.#probeEveryMs = probeEveryMs;
  }

  /** Each limit's floor for the next claim, in the order of `flows`. */
  floors(flows: readonly string[]): string[] {
    return flows.map((flow) => this.#of(flow).floor());
  }

  /** What a claim (or probe) sent at `sent` and returned at `at` saw first under each limit. */
  saw(sent: number, at: number, first: ReadonlyMap<string, string>): void {
    for (const [flow, id] of first) this.#of(flow).saw(sent, at, id);
  }

  /** Rows came back among the limits' ready rows with any id: claims start at each limit's beginning. */
  reset(at: number): void {
    for (const floor of this.#floors.values()) floor.reset(at);
  }

  /** Whether a probe is due for some limit (each one due counts as probed now). */
  probeDue(now = performance.now()): boolean {
    let due = false;
    for (const floor of this.#floors.values()) if (floor.probeDue(now)) due = true;
    return due;
  }

  /** Whether `id` lies below the floor the next claim would start `flow`'s rows at. */
  below(flow: string, id: string): boolean {
    return BigInt(id) < BigInt(this.#of(flow).floor());
  }

  #of(flow: string): ReadyFloor {
    let floor = this.#floors.get(flow);
    if (floor === undefined) {
      floor = new ReadyFloor(this.#windowMs, this.#probeEveryMs);
      this.#floors.set(flow, floor);
    }
    return floor;
  }
}
