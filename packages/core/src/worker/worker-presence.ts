import { toError } from '../errors.js';
import type { LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskWorkerGone, taskWorkerSeen } from '../sql/task-worker-presence.js';

/** How often a running worker says it is alive in the worker list (core migration 11). */
export const PRESENCE_INTERVAL_MS = 30_000;

/**
 * A worker's row in its task table's worker list (core migration 11): the task versions it runs,
 * written at start and every {@link PRESENCE_INTERVAL_MS}, deleted at stop, so that runs no live
 * worker can claim are shown rather than wait unnoticed. Its statements go through the worker's
 * own pool, so a stop that cuts the worker's connections cuts these too.
 * @internal
 */
export class WorkerPresence {
  readonly #db: Executor;
  readonly #table: LeasedTable<unknown>;
  readonly #owner: string;
  readonly #accepts: Readonly<Record<string, readonly number[]>>;
  readonly #onError: (error: Error) => void;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> = Promise.resolve();

  constructor(db: Executor, table: LeasedTable<unknown>, owner: string, accepts: Readonly<Record<string, readonly number[]>>, onError: (error: Error) => void) {
    this.#db = db;
    this.#table = table;
    this.#owner = owner;
    this.#accepts = accepts;
    this.#onError = onError;
  }

  /** Writes the row now and every interval; not awaited by the worker's start. */
  start(): void {
    this.#write();
    this.#timer = setInterval(() => this.#write(), PRESENCE_INTERVAL_MS).unref();
  }

  /** No more writes; the row is deleted after the write in flight. Resolves when that is done (or failed). */
  stop(): Promise<void> {
    if (this.#timer === undefined) return this.#inFlight;
    clearInterval(this.#timer);
    this.#timer = undefined;
    return (this.#inFlight = this.#inFlight.then(() => this.#run(() => taskWorkerGone(this.#db, this.#table, this.#owner))));
  }

  #write(): void {
    this.#inFlight = this.#inFlight.then(() => this.#run(() => taskWorkerSeen(this.#db, this.#table, this.#owner, this.#accepts)));
  }

  async #run(statement: () => Promise<void>): Promise<void> {
    try {
      await statement();
    } catch (error) {
      const e = toError(error);
      this.#onError(new Error(`the worker list was not updated: ${e.message}`, { cause: e }));
    }
  }
}
