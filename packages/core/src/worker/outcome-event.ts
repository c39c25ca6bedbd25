import type { EventEmitter } from 'eventemitter3';
import type { Outcome } from '../outcome.js';
import type { Claimed } from '../sql/lease-row.js';
import type { TaskStatus } from '../task-status.js';
import type { Transition } from '../transition.js';
import { listened, safeEmit, type WorkerEventMap } from './events.js';
import type { WorkerLog } from './worker-log.js';

/**
 * Emits the one event that a fenced write which won (`status` written) stands for, and logs it:
 * a dead task once (error), a retry at debug.
 */
export function emitOutcome<Row>(
  worker: EventEmitter<WorkerEventMap<Row>>,
  log: WorkerLog,
  task: Claimed<Row>,
  outcome: Outcome,
  transition: Transition,
  status: TaskStatus | null,
  durationMs: number,
): void {
  if (status === 'done') {
    if (listened(worker, 'task:succeeded')) safeEmit(worker, 'task:succeeded', { task, durationMs });
  } else if (status === 'dead') {
    const error = deadError(outcome, transition);
    log.write('error', `task ${task.id} is dead after attempt ${task.attempts} of ${task.maxAttempts}: ${error.message}`, {
      ...log.task(task),
      err: error,
    });
    safeEmit(worker, 'task:dead', { task, error });
  } else if (status === 'pending' && transition.to === 'pending') {
    if (outcome.kind === 'defer') {
      safeEmit(worker, 'task:deferred', { task, delayMs: outcome.delayMs, reason: outcome.reason });
    } else if (outcome.kind === 'retryable') {
      log.write('debug', `task ${task.id} failed on attempt ${task.attempts}, retrying in ${transition.delayMs} ms: ${outcome.error.message}`, {
        ...log.task(task),
        err: outcome.error,
        delayMs: transition.delayMs,
      });
      safeEmit(worker, 'task:retrying', { task, error: outcome.error, delayMs: transition.delayMs });
    }
  }
}

// What the handler threw, when it threw; a deferral past its age bound has only the written reason.
function deadError(outcome: Outcome, transition: Transition): Error {
  if (outcome.kind === 'permanent' || outcome.kind === 'retryable' || outcome.kind === 'lease-lost') return outcome.error;
  return new Error(transition.to === 'done' ? 'dead' : (transition.error ?? 'dead'));
}
