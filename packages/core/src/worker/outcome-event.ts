import type { EventEmitter } from 'eventemitter3';
import type { Outcome } from '../outcome.js';
import type { Claimed } from '../sql/lease-row.js';
import type { TaskStatus } from '../task-status.js';
import type { Transition } from '../transition.js';
import { safeEmit, type WorkerEventMap } from './events.js';

/** Emits the one event that a fenced write which won (`status` written) stands for. */
export function emitOutcome<Row>(
  worker: EventEmitter<WorkerEventMap<Row>>,
  task: Claimed<Row>,
  outcome: Outcome,
  transition: Transition,
  status: TaskStatus | null,
  durationMs: number,
): void {
  if (status === 'done') {
    safeEmit(worker, 'task:succeeded', { task, durationMs });
  } else if (status === 'dead') {
    // a deferral past its age bound lands here too, with the defer reason as its error
    safeEmit(worker, 'task:dead', { task, error: transition.to === 'done' ? 'dead' : (transition.error ?? 'dead') });
  } else if (status === 'pending' && transition.to === 'pending') {
    if (outcome.kind === 'defer') safeEmit(worker, 'task:deferred', { task, delayMs: outcome.delayMs, reason: outcome.reason });
    else if (outcome.kind === 'retryable') safeEmit(worker, 'task:retrying', { task, error: outcome.error, delayMs: transition.delayMs });
  }
}
