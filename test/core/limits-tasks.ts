// The limited tasks of limits-processes.int.test.ts, shared by the test (which enqueues them) and
// limits-child.ts (whose workers run them). A handler prints one line per run, with the clock of
// its start and end: the processes share the machine's clock.
import { setTimeout as sleep } from 'node:timers/promises';
import { defineLimit, defineTask } from '@leasehold/core';

/** At most 3 running at once across all processes. */
export const api = defineLimit('api', { concurrency: 3 });
/** At most 2 running at once per tenant. */
export const tenant = defineLimit('tenant', { concurrencyPerKey: 2 });
/** At most 50 starts in any second. */
export const paced = defineLimit('paced', { rate: { limit: 50, period: '1s' } });
/** At most 64 running at once across all processes: kept in stripes (64 or more, concurrency alone). */
export const wide = defineLimit('wide', { concurrency: 64 });

export interface Work {
  /** How long the handler takes. */
  readonly ms: number;
  /** What the line reports as the key. */
  readonly key: string;
}

async function run({ ms, key }: Work, ctx: { task: { id: string; attempts: number } }): Promise<void> {
  const start = Date.now();
  await sleep(ms);
  process.stdout.write(`run ${ctx.task.id} ${key} ${start} ${Date.now()} ${ctx.task.attempts}\n`);
}

export const callApi = defineTask<Work>('call-api', { limit: api, lease: '20s', handler: run });
export const syncTenant = defineTask<Work>('sync-tenant', { limit: tenant, lease: '20s', handler: run });
export const pacedCall = defineTask<Work>('paced-call', { limit: paced, lease: '20s', handler: run });
// a short lease: a killed worker's tasks are taken over within seconds
export const wideCall = defineTask<Work>('wide-call', { limit: wide, lease: '3s', handler: run });
