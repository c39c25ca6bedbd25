import type { EventEmitter } from 'eventemitter3';
import { safeEmit, type WorkerEventMap } from './events.js';
import type { Finalizer } from './finalizer.js';
import type { Heartbeat } from './heartbeat.js';
import type { Listener } from './listener.js';
import { settlesBy } from './settles-by.js';
import type { TaskRunner } from './task-runner.js';
import type { TrackedPool } from './tracked-pool.js';
import type { Wakeup } from './wakeup.js';
import type { WorkerLog } from './worker-log.js';

/**
 * How long a stop waits, past its `timeout`, for the database to answer the writes that give
 * tasks back (and for the LISTEN connection to close) before it abandons them.
 */
const STOP_GRACE_MS = 500;
/** After abandoning, what was cut fails at once; this only bounds a pool that cannot be cut. */
const ABANDON_SETTLE_MS = 100;

/** What a stop winds down; all of it belongs to the stopping worker. */
export interface ShutdownParts<Row> {
  readonly owner: string;
  readonly runner: TaskRunner<Row>;
  readonly listener: Listener | undefined;
  readonly db: TrackedPool;
  readonly finalizer: Finalizer;
  readonly heartbeat: Heartbeat;
  readonly wakeup: Wakeup;
  readonly log: WorkerLog;
  readonly emitter: EventEmitter<WorkerEventMap<Row>>;
  /** The start in progress or done, if any (read when the handlers are done). */
  readonly starting: () => Promise<void> | undefined;
  /** The claim loop, if it was started (read after the start settled). */
  readonly loop: () => Promise<void> | undefined;
}

/**
 * The stop sequence, once the worker no longer claims: gives buffered tasks back, lets running
 * handlers finish until `timeoutMs`, aborts the rest (their tasks go back to pending), then gives
 * the database half a second to answer those writes before abandoning what it has not answered.
 * @internal
 */
export async function shutDown<Row>(p: ShutdownParts<Row>, timeoutMs: number): Promise<void> {
  const handlersUntil = performance.now() + timeoutMs;
  const databaseUntil = handlersUntil + STOP_GRACE_MS;
  p.wakeup.wake();
  // also ends a connection attempt that start() may still be waiting for
  const listenerClosed = p.listener?.stop(STOP_GRACE_MS);
  p.runner.releaseBuffered();
  await settlesBy(p.runner.drained(), handlersUntil);
  p.runner.abortAll();
  const settled = Promise.all([settle(p), listenerClosed]);
  if (!(await settlesBy(settled, databaseUntil))) await abandon(p, settled);
}

/** Everything after the handlers: the start, the claim loop, the writes, the last heartbeat. */
async function settle<Row>(p: ShutdownParts<Row>): Promise<void> {
  await p.starting()?.catch(() => undefined); // a start that failed has nothing to settle
  await p.loop();
  await p.runner.drained();
  await p.heartbeat.stop();
  await p.finalizer.idle();
}

// The database did not answer in time: cut what waits on it, so that stop returns and holds
// nothing. The tasks whose writes were cut stay `processing` under our token until their
// lease expires; then they are claimed again, as after a crash (the fence makes a write that
// did land before the cut harmless).
async function abandon<Row>(p: ShutdownParts<Row>, settled: Promise<unknown>): Promise<void> {
  const tasks = p.runner.tasks();
  const connections = p.db.abandon();
  p.finalizer.abandon();
  p.heartbeat.stop().catch(() => undefined);
  await settlesBy(settled, performance.now() + ABANDON_SETTLE_MS);
  const ids = tasks.map((t) => t.id).join(', ');
  p.log.write(
    'warn',
    `worker ${p.owner} stopped without an answer from the database: ` +
      `${tasks.length} task(s) abandoned${tasks.length > 0 ? ` (ids ${ids})` : ''}, ${connections} connection(s) cut; ` +
      'abandoned tasks run again once their lease expires',
    { taskIds: tasks.map((t) => t.id), connections },
  );
  safeEmit(p.emitter, 'worker:abandoned', { owner: p.owner, tasks, connections });
}
