// The workflow of the rolling-deploy test (deploy.int.test.ts), in its old and its new code.
// Both run the same task name; the new code adds a fraud check after the cool-down, behind a
// patch, and raises the version (accepting the old one), so workers of either code run side by
// side: runs the new code started, or took the patch in, are never claimed by the old code.
import { defineSignal, defineTask, type TaskContext } from '@leasehold/core';

export type Code = 'old' | 'new';

/** What a run returns: which code ran each step, and whether it took the patched path. */
export interface DeployResult {
  readonly n: number;
  readonly by: Readonly<Record<string, Code>>;
}

export const approve = defineSignal<{ ok: boolean }>('approve');

export function deployFlow(code: Code, onStart: (ctx: TaskContext) => Promise<void> = async () => undefined) {
  return defineTask('deploy-order', {
    ...(code === 'new' ? { version: 2, accepts: [1] } : {}),
    handler: async (p: { n: number; napMs: number }, ctx: TaskContext): Promise<DeployResult> => {
      await onStart(ctx);
      const by: Record<string, Code> = {};
      by.reserve = (await ctx.step('reserve', () => code)) as Code;
      await ctx.sleep('cool', p.napMs);
      if (code === 'new' && (await ctx.patched('fraud-check'))) by.fraud = (await ctx.step('fraud', () => code)) as Code;
      const answer = await ctx.waitForSignal(approve, { timeout: '5m' });
      if (answer.timedOut || !answer.payload.ok) throw new Error(`run ${p.n} was not approved`);
      by.ship = (await ctx.step('ship', () => code)) as Code;
      return { n: p.n, by };
    },
  });
}
