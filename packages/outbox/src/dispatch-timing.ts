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
 * The most messages a dispatcher may hold at once (running, buffered, or being finalized) so that
 * they all finish inside one lease even with heartbeats failing (a database outage): its slots
 * publish them one after another, each using its whole timeout, so each slot gets as many
 * publish timeouts as fit strictly inside the lease. The same rule as {@link checkDispatchTiming},
 * for the buffer that the dispatcher's worker sizes itself instead of one fixed batch.
 * @internal
 */
export function heldLimit(concurrency: number, publishTimeoutMs: number, leaseMs: number): number {
  // ceil(x) - 1 is the largest whole number strictly below x
  const rounds = Math.max(1, Math.ceil(leaseMs / publishTimeoutMs) - 1);
  return concurrency * rounds;
}
