import type { LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskStepRecordMany, type StepRecord } from '../sql/task-steps.js';

interface Pending {
  readonly step: StepRecord;
  readonly resolve: (written: boolean) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Records the plain steps of every workflow running on a pool in batches, as the finalizer
 * writes completions: while one statement is in flight the next steps queue up and go out
 * together, each still fenced by its own task's token. With many workflows recording at once
 * that is one statement (and one commit) for many steps; alone, a step goes out at once.
 * @internal
 */
export class StepRecorder {
  static readonly #byPool = new WeakMap<Executor, Map<string, StepRecorder>>();
  readonly #executor: Executor;
  readonly #table: LeasedTable<unknown>;
  #queue: Pending[] = [];
  #draining = false;

  private constructor(executor: Executor, table: LeasedTable<unknown>) {
    this.#executor = executor;
    this.#table = table;
  }

  /** The recorder of `table`'s steps on `executor` (a pool), made on first use. */
  static of(executor: Executor, table: LeasedTable<unknown>): StepRecorder {
    let byTable = StepRecorder.#byPool.get(executor);
    if (byTable === undefined) StepRecorder.#byPool.set(executor, (byTable = new Map()));
    const key = `${table.schema}.${table.table}`;
    let recorder = byTable.get(key);
    if (recorder === undefined) byTable.set(key, (recorder = new StepRecorder(executor, table)));
    return recorder;
  }

  /** Records one step; false when its task's fence refused it (lease moved on, task cancelled). */
  record(step: StepRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ step, resolve, reject });
      if (!this.#draining) {
        this.#draining = true;
        void this.#drain();
      }
    });
  }

  async #drain(): Promise<void> {
    try {
      // let the steps of the same tick join the first batch
      await new Promise<void>((r) => setImmediate(r));
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        try {
          const written = await taskStepRecordMany(this.#executor, this.#table, batch.map((p) => p.step));
          for (const p of batch) p.resolve(written.has(`${p.step.taskId}/${p.step.name}`));
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.#draining = false;
    }
  }
}
