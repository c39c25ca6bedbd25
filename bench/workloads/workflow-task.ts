// The workflows the workflow-* workloads run: 10 no-op steps each, recorded with ctx.step or
// ctx.dbStep. The runner enqueues with these definitions (only their names matter there); the
// worker child runs them.
import { defineTask } from '@leasehold/core';

export const WORKFLOW_STEPS = 10;

/** Which recording each step pays for: a fenced write (step) or a transaction around it (dbStep). */
export type StepKind = 'step' | 'dbStep';

/** `onDone` runs when a workflow's handler has recorded all its steps. */
export function stepsWorkflow(kind: StepKind, onDone: () => void = () => {}) {
  return defineTask(`workflow-${kind}`, {
    handler: async (_payload: { i: number }, ctx) => {
      for (let i = 0; i < WORKFLOW_STEPS; i++) {
        // each step's function does nothing: what is measured is recording it
        if (kind === 'step') await ctx.step(`s${i}`, () => i);
        else await ctx.dbStep(`s${i}`, async () => i);
      }
      onDone();
    },
  });
}
