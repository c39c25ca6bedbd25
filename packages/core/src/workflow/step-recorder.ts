import type { Executor } from '../sql/execute.js';
import { taskStepRecordMany, type StepRecord } from '../sql/task-steps.js';
import { perPoolAndTable, Batcher } from './batcher.js';

/**
 * The batcher of plain steps' records of every workflow running on a pool (see Batcher):
 * each resolves with false when its task's fence refused it (lease moved on, task cancelled).
 * @internal
 */
export const stepRecorder = perPoolAndTable(
  (executor: Executor, table) =>
    new Batcher<StepRecord, boolean>(async (steps) => {
      const written = await taskStepRecordMany(executor, table, steps);
      return steps.map((step) => written.has(`${step.taskId}/${step.name}`));
    }),
);
