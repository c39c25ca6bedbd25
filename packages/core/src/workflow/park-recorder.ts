import type { PgQueryable } from '../sql/execute.js';
import { taskParkMany, type ParkRequest, type ParkResult } from '../sql/task-park-many.js';
import { perPoolAndTable, Batcher } from './batcher.js';

/**
 * The batcher of the sleeps, signal waits and children waits of every workflow running on a pool
 * (see Batcher, taskParkMany): each records its wait and parks its task unless the wait is
 * over; `lost` when the fence refused. A batch holds one wait per task: a second wait of the same
 * run (calls made together) goes in the next batch, so it finds what the first did, as it would
 * one after the other.
 * @internal
 */
export const parkRecorder = perPoolAndTable(
  (pool: PgQueryable, table) =>
    new Batcher<ParkRequest, ParkResult>(
      (requests) => taskParkMany(pool, table, requests),
      (queue) => {
        const tasks = new Set<string>();
        const picked: number[] = [];
        queue.forEach((request, i) => {
          if (tasks.has(request.taskId)) return;
          tasks.add(request.taskId);
          picked.push(i);
        });
        return picked;
      },
    ),
);
