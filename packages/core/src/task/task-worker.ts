import type { TaskRow } from '../leased-table.js';
import type { Scheduler } from '../schedule/scheduler.js';
import { toError } from '../errors.js';
import { taskWorkerGone, taskWorkerSeen } from '../sql/task-worker-presence.js';
import { LeaseWorker, type StopOptions } from '../worker/lease-worker.js';
import type { LeaseWorkerOptions } from '../worker/lease-worker-options.js';

/** How often a running worker says it is alive in the worker list (core migration 11). */
export const PRESENCE_INTERVAL_MS = 30_000;

/**
 * A worker for typed tasks that also fires its schedules (`createWorker({ schedules })`): the
 * scheduler starts once the worker claims and stops together with it, so one object runs both.
 * While it runs, it keeps its row in the worker list: the task versions it runs, so that runs no
 * live worker can claim are shown (`leasehold stats`, the dashboard) rather than wait unnoticed.
 * @internal
 */
export class TaskWorker extends LeaseWorker<TaskRow> {
  readonly #scheduler: Scheduler | undefined;
  readonly #options: LeaseWorkerOptions<TaskRow>;
  readonly #accepts: Readonly<Record<string, readonly number[]>>;
  #presence: NodeJS.Timeout | undefined;
  #stopped = false;

  /** `scheduler` makes the worker's scheduler, under the worker's owner name. */
  constructor(options: LeaseWorkerOptions<TaskRow>, scheduler: ((owner: string) => Scheduler) | undefined) {
    super(options);
    this.#options = options;
    this.#accepts = Object.fromEntries((options.names ?? []).map((name) => [name, options.versions?.get(name) ?? [1]]));
    this.#scheduler = scheduler?.(this.owner);
  }

  /** Starts the worker, then its schedules (see {@link LeaseWorker.start}). */
  override async start(): Promise<void> {
    await super.start();
    if (this.#stopped) return;
    // not awaited: start() resolves when the worker claims, as before; the row follows at once
    void this.#seen();
    this.#presence = setInterval(() => void this.#seen(), PRESENCE_INTERVAL_MS).unref();
    if (this.#scheduler === undefined || this.#stopped) return;
    try {
      await this.#scheduler.start();
    } catch (error) {
      // a worker whose schedules could not be recorded does not run half-started
      await this.stop({ timeout: 0 });
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
    const wasRunning = this.#presence !== undefined;
    this.#stopped = true;
    clearInterval(this.#presence);
    this.#presence = undefined;
    const schedules = this.#scheduler?.stop({ timeout: options.timeout ?? '30s' }) ?? Promise.resolve();
    // the row goes as the worker stops, not awaited: the worker's stop keeps its deadline whatever
    // the database does (a row left behind is taken for a dead worker's once it is not seen for
    // a while); the statement is sent now, before the application ends its pool
    if (wasRunning) void taskWorkerGone(this.#options.pool, this.#options.table, this.owner).catch((error: unknown) => this.#failed(error));
    return Promise.all([schedules, worker]).then(() => undefined);
  }

  async #seen(): Promise<void> {
    try {
      await taskWorkerSeen(this.#options.pool, this.#options.table, this.owner, this.#accepts);
    } catch (error) {
      this.#failed(error);
    }
  }

  #failed(error: unknown): void {
    const e = toError(error);
    if (this.listenerCount('worker:error') > 0) this.emit('worker:error', { error: new Error(`the worker list was not updated: ${e.message}`, { cause: e }) });
  }
}
