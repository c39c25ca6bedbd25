import { READY_FLOORS_MAX } from '../sql/lease-claim.js';
import { KeyedFloors } from './keyed-floors.js';

/**
 * A `ReadyFloor` per served limit: where the worker's claims start reading each limit's
 * ready rows of key '' and priority 0 (`LeaseClaimInput.flowFloors`), so that a claim under a
 * limit skips the index entries of the limit's rows claimed before, as the unlimited claim does
 * (docs/operations.md, "Long transactions elsewhere"). The same rules as the unlimited floor,
 * and one more: rows scheduled under a limit (a retry, a release, a wake) come back into the
 * limit's ready rows with their old ids when a claim promotes them, so a claim that promoted
 * some ({@link KeyedFloors.reset}) sends the claims after it from each limit's start. Another
 * worker's promotions are taken by that worker's next claim, or found by the probe.
 * @internal
 */
export class LimitFloors extends KeyedFloors<string> {}

/**
 * A `ReadyFloor` per priority of the claim index (`LeaseClaimInput.readyFloors`): where
 * the worker's claims start reading the ready rows of each priority they take, so that a claim
 * skips the index entries of the rows of that priority claimed before, whatever priority the
 * work runs at (docs/operations.md, "Long transactions elsewhere").
 * @internal
 */
export class PriorityFloors extends KeyedFloors<number> {
  constructor(windowMs: number, probeEveryMs: number) {
    // the ones its claims saw latest (a claim gives no more a floor)
    super(windowMs, probeEveryMs, READY_FLOORS_MAX);
  }
}
