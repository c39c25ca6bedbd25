// The five-step workflow the chaos test runs in worker processes (chaos-worker.ts). Each plain
// step does its side effect as a statement of its own (an effect outside the step's record, like
// a call to another service), pauses at random, then records; the database step writes its row
// in the step's own transaction. Every effect row carries the pid of the process that made it.
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { defineTask, type TaskContext } from '@leasehold/core';

export const STEPS = ['a', 'b', 'c', 'd', 'e'] as const;

const pause = () => sleep(Math.floor(Math.random() * 40));

export function chaosFlow(pool: pg.Pool) {
  return defineTask('chaos-flow', {
    lease: '1500ms',
    maxAttempts: 100,
    backoff: { base: '10ms', cap: '100ms' },
    handler: async (p: { n: number }, ctx: TaskContext) => {
      const pids: number[] = [];
      for (const step of STEPS) {
        if (step === 'c') {
          const { pid } = await ctx.dbStep('c', async (client) => {
            await client.query('INSERT INTO chaos_ledger (task_id, pid) VALUES ($1, $2)', [ctx.task.id, process.pid]);
            await pause();
            return { pid: process.pid };
          });
          pids.push(pid);
          continue;
        }
        const { pid } = await ctx.step(step, async () => {
          await pool.query('INSERT INTO chaos_effect (task_id, step, pid) VALUES ($1, $2, $3)', [ctx.task.id, step, process.pid]);
          await pause();
          return { pid: process.pid };
        });
        pids.push(pid);
        await pause();
      }
      return { n: p.n, pids };
    },
  });
}
