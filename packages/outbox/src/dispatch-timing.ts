import { ConfigError } from '@leasehold/core';

/** The settings that bound how long a claimed batch may take. @internal */
export interface DispatchTiming {
  readonly batch: number;
  readonly publishTimeoutMs: number;
  readonly leaseMs: number;
}

/**
 * The design article's rule (section 4.1): `batch × publish timeout` must fit in the lease, so
 * that even a batch published one message after another, each using its whole timeout, is
 * finalized before its lease can run out; otherwise messages at the end of a batch would be
 * claimed again (and on their last attempt reaped dead) while still being published. The
 * dispatcher claims only for free slots and heartbeats in-flight leases, so this bound is
 * conservative; it still holds when heartbeats fail during a database outage. @internal
 */
export function checkDispatchTiming({ batch, publishTimeoutMs, leaseMs }: DispatchTiming): void {
  const worstCaseMs = batch * publishTimeoutMs;
  if (worstCaseMs >= leaseMs) {
    throw new ConfigError(
      'lease',
      `Expected \`batch\` × \`publishTimeout\` (${batch} × ${publishTimeoutMs} ms = ${worstCaseMs} ms) to be shorter than \`lease\` (${leaseMs} ms): ` +
        'raise `lease`, or lower `batch` or `publishTimeout`',
    );
  }
}

/**
 * How long after its claim a message may still start publishing on that claim's lease alone:
 * the latest start the design article's rule allows the last message of a batch (each slot
 * publishing one message after another, each using its whole timeout, as many timeouts as fit
 * strictly inside the lease), so a publish started by then ends before the lease does even if no
 * heartbeat got through. The dispatcher buffers by observed publish time, not by this bound; a
 * message that waited longer is published only after a fenced lease extension. @internal
 */
export function unconfirmedStartMs(publishTimeoutMs: number, leaseMs: number): number {
  // ceil(x) - 1 is the largest whole number strictly below x: the timeouts that fit in the lease
  const rounds = Math.max(1, Math.ceil(leaseMs / publishTimeoutMs) - 1);
  return (rounds - 1) * publishTimeoutMs;
}
