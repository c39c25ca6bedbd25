// The task type every bench workload enqueues and runs. Workers replace the handler with their
// own (see child-worker.ts); producers only need the name.
import { defineTask, type TaskOptions } from '@leasehold/core';

/** Payload of a bench task: its sequence number (negative for warm-up tasks). */
export interface BenchPayload {
  readonly i: number;
}

export const NOOP_NAME = 'noop';

/** The producers' definition; its handler never runs. */
export const noop = defineTask<BenchPayload>(NOOP_NAME, { handler: () => {} });

/** A worker's definition of the same task, with its own handler and options. */
export function noopWith(options: TaskOptions<BenchPayload>) {
  return defineTask<BenchPayload>(NOOP_NAME, options);
}
