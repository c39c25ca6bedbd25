import type { LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskStepRecordMany, type StepRecord } from '../sql/task-steps.js';
import { perPoolAndTable, Batcher, type TakenRequests } from './batcher.js';

/**
 * A worker's completions that can go in the statement of a batch of step records (its
 * `Finalizer`): the runs of one worker that end and the runs that record a step then commit
 * together (see `stepsAndDoneWrite`).
 * @internal
 */
export interface StepRecordPartner {
  /**
   * Writes `steps` together with the completions it has queued that can go with them, and
   * resolves with the steps written (`task_id/name` keys); undefined, writing nothing, when it
   * has none queued.
   */
  writeWithSteps(steps: readonly StepRecord[]): Promise<Set<string>> | undefined;
}

/**
 * The batcher of plain steps' records of every workflow running on a pool (see Batcher): each
 * resolves with false when its task's fence refused it (lease moved on, task cancelled). A batch
 * goes out with the completions a paired worker has queued (see {@link StepRecordPartner}), and
 * that worker takes the records queued here into its own write of completions
 * ({@link takeQueued}): whichever is sent first carries both.
 * @internal
 */
export class StepRecorder {
  readonly #batcher: Batcher<StepRecord, boolean>;
  readonly #partners = new Set<StepRecordPartner>();

  constructor(executor: Executor, table: LeasedTable<unknown>) {
    this.#batcher = new Batcher(async (steps) => {
      const written = (await this.#withPartner(steps)) ?? (await taskStepRecordMany(executor, table, steps));
      return steps.map((step) => written.has(`${step.taskId}/${step.name}`));
    });
  }

  /** Queues one step record (see Batcher.submit). */
  submit(step: StepRecord): Promise<boolean> {
    return this.#batcher.submit(step);
  }

  /** The records queued and not yet sent, for a partner's write (see Batcher.takeQueued). */
  takeQueued(): TakenRequests<StepRecord, boolean> | undefined {
    return this.#batcher.takeQueued();
  }

  /** Sends the batches of records with `partner`'s completions when it has some; returns the unpairing. */
  pair(partner: StepRecordPartner): () => void {
    this.#partners.add(partner);
    return () => this.#partners.delete(partner);
  }

  #withPartner(steps: readonly StepRecord[]): Promise<Set<string>> | undefined {
    for (const partner of this.#partners) {
      const written = partner.writeWithSteps(steps);
      if (written !== undefined) return written;
    }
    return undefined;
  }
}

/** The {@link StepRecorder} of a pool and table. @internal */
export const stepRecorder = perPoolAndTable((executor: Executor, table) => new StepRecorder(executor, table));
