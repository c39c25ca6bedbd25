// The task types of bench/soak.ts, shared by its runner (which enqueues with them) and its worker
// children (bench/soak-child.ts, which run them). Every task's payload has a key of its own, `k`;
// every handler records its effect in `<schema>.soak_effect` (kind, key, due time, when it ran, by
// which process, and an ordered task's place in its group) on the pool given.
import type pg from 'pg';
import { defineLimit, defineTask, RetryableError } from '@leasehold/core';

/** The lease of every soak task: short, so a killed worker's tasks come back within seconds. */
export const SOAK_LEASE = '3s';

/** Wall-clock ms with sub-millisecond resolution. */
const wallNow = () => performance.timeOrigin + performance.now();

/**
 * `version` 2 is the code of a deploy under running workflows (docs/workflows.md, "Changing
 * workflow code"): the sleeping workflow gains a step behind a patch before its sleep and one at
 * its end, as version 2 that also runs version 1's runs.
 */
export function soakTasks(schema: string, pool: pg.Pool, version: 1 | 2 = 1) {
  const effect = (kind: string, key: string, dueMs: number | null, place: string | null = null) =>
    pool.query(`INSERT INTO ${schema}.soak_effect (kind, key, due_ms, at_ms, pid, place) VALUES ($1, $2, $3, $4, $5, $6)`, [kind, key, dueMs, wallNow(), process.pid, place]);
  const limit = defineLimit('soak-concurrency', { concurrency: 20 });
  const leaf = defineTask<{ k: string }>('soak-leaf', { lease: SOAK_LEASE, handler: async ({ k }) => void (await effect('leaf', k, null)) });
  return {
    plain: defineTask<{ k: string }>('soak-plain', { lease: SOAK_LEASE, handler: async ({ k }) => void (await effect('plain', k, null)) }),
    /** Enqueued with `runAt`: `due` is that time, on the runner's clock. */
    at: defineTask<{ k: string; due: number }>('soak-at', { lease: SOAK_LEASE, handler: async ({ k, due }) => void (await effect('at', k, due)) }),
    retry: defineTask<{ k: string; after: number }>('soak-retry', {
      lease: SOAK_LEASE,
      backoff: { base: 1, cap: 1 },
      handler: async ({ k, after }, ctx) => {
        if (ctx.task.attempts <= 1) throw new RetryableError('the first attempt fails on purpose', { retryAfterMs: after });
        await effect('retry', k, null);
      },
    }),
    /** A workflow: a step, a sleep, a step that records the effect against the sleep's end. */
    sleep: defineTask<{ k: string; ms: number }>('soak-sleep', {
      lease: SOAK_LEASE,
      ...(version === 2 ? { version: 2, accepts: [1] } : {}),
      handler: async ({ k, ms }, ctx) => {
        const calledAt = await ctx.step('called', async () => wallNow());
        if (version === 2 && (await ctx.patched('audit'))) await ctx.step('audit', async () => wallNow());
        await ctx.sleep('nap', ms);
        await ctx.step('woke', async () => void (await effect('sleep', k, calledAt + ms)));
        if (version === 2) await ctx.step('after', async () => wallNow());
      },
    }),
    limited: defineTask<{ k: string }>('soak-limited', {
      lease: SOAK_LEASE,
      limit,
      handler: async ({ k }) => {
        await new Promise((r) => setTimeout(r, 3));
        await effect('limited', k, null);
      },
    }),
    /** A workflow that fans out to five `leaf` children, waits for them, then records its effect. */
    fan: defineTask<{ k: string }>('soak-fan', {
      lease: SOAK_LEASE,
      handler: async ({ k }, ctx) => {
        const kids = await ctx.spawn('kids', leaf, Array.from({ length: 5 }, (_, i) => ({ payload: { k: `${k}.${i}` } })));
        await ctx.waitForChildren(kids);
        await ctx.step('fanned', async () => void (await effect('fan', k, null)));
      },
    }),
    leaf,
    /** Ordered: `seq` is its place in its group `g`. */
    ordered: defineTask<{ k: string; g: string; seq: number }>('soak-ordered', {
      lease: SOAK_LEASE,
      ordered: true,
      handler: async ({ k, g, seq }) => void (await effect('ordered', k, null, `${g}:${seq}`)),
    }),
  };
}
