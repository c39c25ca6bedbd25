import type { ScheduleState } from '../sql/schedule-lock.js';
import type { CronRule } from './cron-rule.js';

/** What a firer does with a schedule's due ticks. */
export interface TickPlan {
  /** Ticks to enqueue a task for, oldest first. */
  readonly fire: readonly Date[];
  /** Due ticks passed over (missed beyond `catchUp`, or paused), counted up to {@link MAX_COUNTED} more than fire. */
  readonly skipped: number;
  /** The new `last_tick`: the latest due tick, or null when none is due. */
  readonly advanceTo: Date | null;
}

/**
 * Skipped ticks are counted up to this many: croner walks back tick by tick, so a schedule down
 * for days reports "at least" this many rather than spending seconds counting them.
 */
export const MAX_COUNTED = 100;

/**
 * Decides, from a schedule's row as locked, which due ticks fire. Due: after `last_tick` (or,
 * for a schedule that never fired, after it was created) and not after the database's now.
 *
 * - `current`: a running scheduler's timer came for the latest due tick: it fires, however late
 *   (a database outage, a paused event loop), and the earlier due ticks it finds were missed.
 * - `backlog`: a scheduler starts while no other is seen running the schedule: every due tick
 *   came due while nobody ran it, so every one was missed.
 *
 * Of the missed ticks, the `catchUp` most recent fire too; the rest are skipped. A paused
 * schedule fires none.
 */
export function ticksToFire(rule: CronRule, state: ScheduleState, catchUp: number, mode: 'current' | 'backlog'): TickPlan {
  const floor = state.lastTick ?? state.createdAt;
  const due = rule.latest(floor, state.now, 1 + catchUp + MAX_COUNTED); // latest first
  const latest = due[0];
  if (latest === undefined) return { fire: [], skipped: 0, advanceTo: null };
  if (state.paused) return { fire: [], skipped: due.length, advanceTo: latest };
  const fire = due.slice(0, (mode === 'current' ? 1 : 0) + catchUp);
  return { fire: fire.reverse(), skipped: due.length - fire.length, advanceTo: latest };
}
