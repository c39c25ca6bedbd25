// A bench child process for the workflow workloads: one worker (createWorker, the process-*
// settings) running the 10-step workflow of workflow-task.ts. It speaks the runner's consumer
// protocol (bench/lib/child-serve.ts): 'ready', 'go', counts of finished workflows, 'cpu',
// 'stats', 'stop'.
//   workflow-child.ts '<json WorkflowChildOptions>'   (forked by workflow.ts)
import { createWorker } from '@leasehold/core';
import { createPool, type ChildOptions } from '../lib/child-options.js';
import { serveConsumer } from '../lib/child-serve.js';
import { stepsWorkflow, type StepKind } from './workflow-task.js';

export interface WorkflowChildOptions extends ChildOptions {
  readonly kind: StepKind;
}

const send = (message: Record<string, unknown>) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as WorkflowChildOptions;
  const pool = createPool(options, 10);
  await Promise.all(Array.from({ length: 4 }, () => pool.query('SELECT 1')));
  let handled = 0;
  let failures = 0;
  const worker = createWorker({
    pool,
    schema: options.schema,
    tasks: [stepsWorkflow(options.kind, () => void handled++)],
    concurrency: options.concurrency ?? 8,
    ...(options.batch === undefined ? {} : { batch: options.batch }),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
  });
  worker.on('worker:error', ({ error }) => console.error(`[bench workflow worker] ${error.message}`));
  worker.on('task:retrying', () => void failures++);
  worker.on('task:dead', () => void failures++);
  // the runner went away (Ctrl-C, a crash): do not outlive it
  process.on('disconnect', () => process.exit(1));
  await serveConsumer(
    {
      start: () => worker.start(),
      stop: async () => {
        await worker.stop({ timeout: '10s' });
        await pool.end();
      },
      handled: () => handled,
      stats: () => ({ failures }),
    },
    send,
  );
}

main().catch(async (error: unknown) => {
  await send({ type: 'error', message: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error) });
  process.exit(1);
});
