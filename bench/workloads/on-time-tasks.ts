// The task types of the on-time workloads (issue 32: timers, scheduled tasks and limited tasks
// start when they are due), shared by the runner (which enqueues with them: only their names and
// limits matter there) and the worker children of on-time-child.ts (which run them).
import { defineLimit, defineTask, RetryableError } from '@leasehold/core';

export const ON_TIME = {
  sleep: 'on-time-sleep',
  at: 'on-time-at',
  retry: 'on-time-retry',
  limited: 'on-time-limited',
  free: 'on-time-free',
  conc: 'on-time-conc',
  plain: 'on-time-plain',
} as const;

/** The rate limit of limits-mix. */
export const LIMIT_NAME = 'on-time-rate';

/** The name of the sleep in the workflow, and of the database step right after it. */
export const SLEEP_STEP = 'nap';
export const AFTER_STEP = 'after';

/** Wall-clock ms with sub-millisecond resolution (the process's time origin plus the monotonic clock). */
export const wallNow = () => performance.timeOrigin + performance.now();

export interface OnTimeSettings {
  /** sleep-lateness: how long each workflow sleeps. */
  readonly sleepMs?: number;
  /** retry-lateness: the fixed delay before the second attempt. */
  readonly retryMs?: number;
  /** limits-mix: the rate limit's starts per second. */
  readonly rate?: number;
  /** limits-mix: how long each unlimited task's handler takes. */
  readonly workMs?: number;
  /** limit-concurrency: the concurrency-only limit's bound. */
  readonly concurrency?: number;
}

/** What a worker child does when a measured handler starts (and, for the unlimited work, ends). */
export interface OnTimeHooks {
  readonly start: (i: number, t: number, kind: string) => void;
  readonly end?: (i: number, t: number, kind: string) => void;
  /** A limited task's claim time on the database's clock (ms), read from its lease in the handler. */
  readonly claimed?: (i: number, taskId: string, leaseMs: number) => Promise<void>;
}

/** The limited tasks' lease (the library's default, given so the claim time can be read back). */
export const LIMITED_LEASE_MS = 60_000;

const none: OnTimeHooks = { start: () => {} };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Every task type of the on-time workloads; the runner calls it without hooks. */
export function onTimeTasks(s: OnTimeSettings, hooks: OnTimeHooks = none) {
  const rateLimit = defineLimit(LIMIT_NAME, { rate: { limit: s.rate ?? 50, period: '1s' } });
  const concLimit = defineLimit('on-time-concurrency', { concurrency: s.concurrency ?? 1000 });
  return {
    /**
     * A workflow: sleep, then one step that notes when it started by the worker's clock (the
     * shape of the workflow harness's wf-sleep: a plain recorded step after the sleep).
     */
    sleep: defineTask<{ i: number }>(ON_TIME.sleep, {
      handler: async ({ i }, ctx) => {
        await ctx.sleep(SLEEP_STEP, s.sleepMs ?? 1000);
        const r = await ctx.step(AFTER_STEP, async () => ({ local: wallNow() }));
        hooks.start(i, r.local, 'sleep');
      },
    }),
    /** A plain task enqueued with a start time (runAt). */
    at: defineTask<{ i: number }>(ON_TIME.at, { handler: ({ i }) => hooks.start(i, wallNow(), 'at') }),
    /** Fails its first attempt with a fixed delay (backoff bounded to 1 ms, so retryAfterMs decides), then succeeds. */
    retry: defineTask<{ i: number }>(ON_TIME.retry, {
      backoff: { base: 1, cap: 1 },
      handler: ({ i }, ctx) => {
        const t = wallNow();
        if (ctx.task.attempts <= 1) throw new RetryableError('first attempt fails on purpose', { retryAfterMs: s.retryMs ?? 1000 });
        hooks.start(i, t, 'retry');
      },
    }),
    /** Under a rate limit; does nothing but report when it started and when it was claimed. */
    limited: defineTask<{ i: number }>(ON_TIME.limited, {
      limit: rateLimit,
      lease: LIMITED_LEASE_MS,
      handler: async ({ i }, ctx) => {
        hooks.start(i, wallNow(), 'L');
        await hooks.claimed?.(i, ctx.task.id, LIMITED_LEASE_MS);
      },
    }),
    /** Unlimited work: the handler takes workMs. */
    free: defineTask<{ i: number }>(ON_TIME.free, {
      handler: async ({ i }) => {
        hooks.start(i, wallNow(), 'F');
        await sleep(s.workMs ?? 50);
        hooks.end?.(i, wallNow(), 'F');
      },
    }),
    /** Under a concurrency-only limit; does nothing. */
    conc: defineTask<{ i: number }>(ON_TIME.conc, { limit: concLimit, handler: ({ i }) => hooks.start(i, 0, 'C') }),
    /** The same with no limit. */
    plain: defineTask<{ i: number }>(ON_TIME.plain, { handler: ({ i }) => hooks.start(i, 0, 'P') }),
  };
}

export type OnTimeTasks = ReturnType<typeof onTimeTasks>;
export type OnTimeKind = keyof OnTimeTasks;
