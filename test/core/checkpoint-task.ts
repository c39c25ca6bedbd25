import type pg from 'pg';
import { defineTask } from '@leasehold/core';

/**
 * Five steps, each recorded in `step_sink` and checkpointed; with `hangAfter` the handler tells
 * its parent (stdout) once that step is checkpointed, then never returns.
 */
export function stepsTask(pool: pg.Pool, { hangAfter }: { hangAfter?: number } = {}) {
  return defineTask<{ steps: number }, { done: number }>('steps', {
    lease: 400,
    handler: async ({ steps }, ctx) => {
      for (let step = (ctx.lastCheckpoint?.done ?? 0) + 1; step <= steps; step++) {
        await pool.query('INSERT INTO step_sink (task_id, step, pid) VALUES ($1, $2, $3)', [ctx.task.id, step, process.pid]);
        await ctx.checkpoint({ done: step });
        if (step === hangAfter) {
          process.stdout.write(`checkpointed ${step}\n`);
          await new Promise(() => {}); // "crash" here: the parent kills this process
        }
      }
    },
  });
}
