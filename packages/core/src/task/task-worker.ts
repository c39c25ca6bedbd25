import type { TaskRow } from '../leased-table.js';
import type { Scheduler } from '../schedule/scheduler.js';
import { SCHEDULER_EVENTS, type SchedulerEventMap } from '../schedule/scheduler-events.js';
import { safeEmit, type WorkerEventMap } from '../worker/events.js';
import { LeaseWorker, type StopOptions } from '../worker/lease-worker.js';
import type { LeaseWorkerOptions } from '../worker/lease-worker-options.js';
import { stepRecorder } from '../workflow/step-recorder.js';

/**
 * A worker for typed tasks that also fires its schedules (`createWorker({ schedules })`): the
 * scheduler starts once the worker claims and stops together with it, so one object runs both.
 * @internal
 */
export class TaskWorker extends LeaseWorker<TaskRow> {
  readonly #scheduler: Scheduler | undefined;
  #stopped = false;

  /** `scheduler` makes the worker's scheduler, under the worker's owner name. */
  constructor(options: LeaseWorkerOptions<TaskRow>, scheduler: ((owner: string) => Scheduler) | undefined) {
    super(options);
    // its runs' step records go with its completions (the runs record through the same pool)
    this.recordStepsWith(stepRecorder(options.pool, options.table));
    this.#scheduler = scheduler?.(this.owner);
    // the scheduler is the worker's own: what it reports, the worker reports (docs/schedules.md)
    for (const event of SCHEDULER_EVENTS) this.#forward(event);
  }

  #forward<K extends keyof SchedulerEventMap>(event: K): void {
    // WorkerEventMap extends SchedulerEventMap: the same payload, which TS cannot see for a generic K
    this.#scheduler?.on(event, (...payload: SchedulerEventMap[K]) => safeEmit<TaskRow, K>(this, event, ...(payload as WorkerEventMap<TaskRow>[K])));
  }

  /** Starts the worker, then its schedules (see {@link LeaseWorker.start}). */
  override async start(): Promise<void> {
    await super.start();
    if (this.#scheduler === undefined || this.#stopped) return;
    try {
      await this.#scheduler.start();
    } catch (error) {
      // a worker whose schedules could not be recorded does not run half-started
      await super.stop({ timeout: 0 });
      throw error;
    }
  }

  /**
   * Stops the schedules and the worker together, so the worker's deadline holds for both (see
   * {@link LeaseWorker.stop}).
   */
  override stop(options: StopOptions = {}): Promise<void> {
    // first, so that a bad timeout throws here before anything stops
    const worker = super.stop(options);
    this.#stopped = true;
    const schedules = this.#scheduler?.stop({ timeout: options.timeout ?? '30s' }) ?? Promise.resolve();
    return Promise.all([schedules, worker]).then(() => undefined);
  }
}
