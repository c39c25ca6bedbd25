import type { LeaseToken } from '../primitives.js';
import type { Executor } from '../sql/execute.js';
import { taskStepsReadMany, type RecordedStep } from '../sql/task-steps.js';
import { Batcher, perPoolAndTable } from './batcher.js';

/**
 * The batcher of the replay reads of every workflow running on a pool (see Batcher,
 * taskStepsReadMany): runs that a claim started together, the wakes of many sleeps say, read
 * what they recorded in one round trip, and a due sleep among it is closed on the way.
 * @internal
 */
export const replayReader = perPoolAndTable(
  (executor: Executor, table) =>
    new Batcher<LeaseToken, ReadonlyMap<string, RecordedStep>>(async (tokens) => {
      const byTask = await taskStepsReadMany(executor, table, tokens);
      return tokens.map((t) => byTask.get(t.id) ?? new Map());
    }),
);
