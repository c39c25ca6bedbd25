import type { EventEmitter } from 'eventemitter3';
import type { LeaseLostError } from '../errors.js';
import type { PoolCounts } from './checkout-watch.js';
import type { ReapedRow } from '../sql/lease-claim.js';
import type { Claimed } from '../sql/lease-row.js';
import type { RetentionReport } from '../retention/retention-runner.js';
import type { SchedulerEventMap } from '../schedule/scheduler-events.js';

/**
 * Everything a worker reports, as `noun:verb` events with one payload object each.
 * Listeners may throw: the worker catches it and reports it as `worker:error`. The scheduler's
 * events (`schedule:fired`, `schedule:skipped`, `scheduler:error`, see {@link SchedulerEventMap})
 * come from a worker made with `createWorker({ schedules })`, which runs a scheduler; no other
 * worker emits them.
 */
export interface WorkerEventMap<Row> extends SchedulerEventMap {
  /** A claim gave this worker the task; its handler starts now. */
  'task:claimed': [{ task: Claimed<Row> }];
  /** The handler finished and the fenced `done` was written. */
  'task:succeeded': [{ task: Claimed<Row>; durationMs: number }];
  /** The handler failed transiently; the task is pending again after `delayMs`. */
  'task:retrying': [{ task: Claimed<Row>; error: Error; delayMs: number }];
  /** The handler deferred the task; pending after `delayMs`, attempt refunded. */
  'task:deferred': [{ task: Claimed<Row>; delayMs: number; reason: string }];
  /**
   * The task went dead (permanent failure, attempts exhausted, invalid payload, defer age):
   * `error` is what the handler threw (a deferral past its age bound: an `Error` with its reason).
   */
  'task:dead': [{ task: Claimed<Row>; error: Error }];
  /** The fencing token moved on (heartbeat or finalize refused): this worker's result was not written. */
  'task:lease-lost': [{ task: Claimed<Row>; error: LeaseLostError }];
  /**
   * The workflow parked (a sleep, a wait for children or a signal): its row is `waiting` (or
   * `pending` again when the wait ended as it parked), attempt refunded; it runs again on wake.
   */
  'task:suspended': [{ task: Claimed<Row> }];
  /** `cancelTask` ended the running task: its signal fired with a `CancelledError`; nothing of the run is written. */
  'task:cancelled': [{ task: Claimed<Row> }];
  /** Returned to pending unfinished, attempt refunded (the worker is stopping). */
  'task:released': [{ task: Claimed<Row> }];
  /** Reap sent a task dead: its lease expired on its last attempt (crashing worker?). */
  'task:reaped': [ReapedRow];
  /** A heartbeat statement failed (the leases were not extended this tick). */
  'heartbeat:failed': [{ error: Error }];
  /**
   * The worker's own statements (claim, heartbeat, fenced writes) have waited longer than
   * `heartbeatInterval` for a connection from the pool: something (handlers?) holds all of them.
   * `waitedMs`: the longest wait so far; `waiting`: the worker's statements waiting now; `pool`:
   * what a `pg` pool says about its connections. Fires again while new statements outlast the
   * bound; logged (warn) once per episode, and (info) when connections reach the worker again.
   */
  'pool:waiting': [{ waitedMs: number; waiting: number; pool: PoolCounts | undefined }];
  /** Something failed outside a handler (claim, finalize, LISTEN connection, a listener). */
  'worker:error': [{ error: Error }];
  /** Nothing to claim and nothing in flight. Emitted once each time the worker becomes idle. */
  'worker:idle': [{ owner: string }];
  /** `start()` finished: the worker is claiming. */
  'worker:started': [{ owner: string }];
  /**
   * `stop()` reached its deadline without an answer from the database: it cut the `connections`
   * its statements were waiting on and gave up on these tasks, whose outcome was not written.
   * They stay `processing` until their lease expires, then run again, as after a crash. Also
   * logged (warn).
   */
  'worker:abandoned': [{ owner: string; tasks: Claimed<Row>[]; connections: number }];
  /**
   * This worker's retention turn deleted old finished rows (with their steps and signals): how
   * many per status, in how many statements. Also logged (info). `behind`: the turn used its
   * interval and rows are still due (deletion falls behind what finishes; see docs/operations.md).
   */
  'retention:purged': [RetentionReport];
  /** `stop()` finished: nothing in flight, no connection held. */
  'worker:stopped': [{ owner: string }];
}

/**
 * Whether anyone listens to `event`: per-task events build their payload only then (most
 * workers listen to none of them, and the objects add up at tens of thousands of tasks a second).
 */
export function listened<Row>(emitter: EventEmitter<WorkerEventMap<Row>>, event: keyof WorkerEventMap<Row>): boolean {
  return emitter.listenerCount(event) > 0;
}

/** Emits without letting a throwing listener break the caller; its error becomes `worker:error`. */
export function safeEmit<Row, K extends keyof WorkerEventMap<Row>>(
  emitter: EventEmitter<WorkerEventMap<Row>>,
  event: K,
  ...args: WorkerEventMap<Row>[K]
): void {
  try {
    (emitter.emit as (e: K, ...a: WorkerEventMap<Row>[K]) => boolean)(event, ...args);
  } catch (error) {
    if (event === 'worker:error') return; // a throwing error listener has nowhere left to report to
    try {
      emitter.emit('worker:error', { error: error instanceof Error ? error : new Error(String(error)) });
    } catch {
      // same: nowhere left to report
    }
  }
}
