// A worker's claims go out on its LISTEN connection (Listener.run) and are planned there once,
// generically, from their first run, instead of five custom plans per statement first (each
// 1–17 ms of server CPU for a claim), and never as a sequential scan: a generic plan made while
// the table was empty would otherwise scan it whole once it had grown. That the generic plans
// read no more than the custom ones at production sizes is checked where those sizes are built:
// claim-scale.int.test.ts and limits.int.test.ts run both plans.
import { createWorker, enqueueMany, defineTask, taskTable } from '@leasehold/core';
import { leaseClaim } from '@leasehold/core/internal';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Listener } from '../../packages/core/src/worker/listener.js';
import type { PgQueryable } from '../../packages/core/src/sql/execute.js';
import { useTestDatabase } from '../fixtures.js';
import { useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const table = taskTable();
const job = defineTask<{ i: number }>('plans.job', { handler: () => {} });

async function started(): Promise<Listener> {
  const errors: Error[] = [];
  const listener = new Listener(t.pool, table.channel, () => undefined, (error) => errors.push(error));
  await listener.start();
  expect(errors).toEqual([]);
  expect(listener.listening).toBe(true);
  return listener;
}

async function on<T>(listener: Listener, statement: (client: PgQueryable) => Promise<T>): Promise<T> {
  const sent = listener.run(statement);
  if (sent === undefined) throw new Error('the LISTEN connection is not up');
  return sent;
}

/** The first row of `text`, run on the LISTEN connection. */
const firstRow = <R>(listener: Listener, text: string) => on(listener, async (client) => (await client.query(text)).rows[0] as R);

const planCounts = async (listener: Listener) => {
  const row = await firstRow<{ generic: string | null; custom: string | null }>(
    listener,
    `SELECT sum(generic_plans) AS generic, sum(custom_plans) AS custom FROM pg_prepared_statements WHERE statement LIKE '%FOR UPDATE SKIP LOCKED%'`,
  );
  return { generic: Number(row.generic ?? 0), custom: Number(row.custom ?? 0) };
};

const backendPid = async (listener: Listener) => (await firstRow<{ pid: number }>(listener, 'SELECT pg_backend_pid() AS pid')).pid;

describe('claims on the LISTEN connection', () => {
  it('are planned generically from their first run, each claim statement once', async () => {
    await enqueueMany(t.pool, job, Array.from({ length: 40 }, (_, i) => ({ payload: { i } })));
    const listener = await started();
    try {
      // the whole claim and the ready-only one, as a worker alternates them
      let taken = 0;
      for (let i = 0; i < 8; i++) {
        const result = await on(listener, (client) => leaseClaim(client, table, { owner: 'plans', batch: 5, leaseMs: 60_000, readyOnly: i % 2 === 1 }));
        taken += result.claimed.length;
      }
      expect(taken).toBe(40);
      // without the setting: five custom plans per statement before the generic one
      expect(await planCounts(listener)).toEqual({ generic: 8, custom: 0 });
    } finally {
      await listener.stop(5_000);
    }
  });

  it('keeps planning them generically after the connection is lost and opened again', async () => {
    const listener = await started();
    try {
      const first = await backendPid(listener);
      await t.pool.query('SELECT pg_terminate_backend($1)', [first]);
      // reconnects with backoff (100–200 ms for the first retry)
      await expect.poll(async () => (listener.listening ? backendPid(listener).catch(() => first) : first), { timeout: 15_000 }).not.toBe(first);
      const { plan_cache_mode: mode } = await firstRow<{ plan_cache_mode: string }>(listener, 'SHOW plan_cache_mode');
      expect(mode).toBe('force_generic_plan');
      const { enable_seqscan: seqscan } = await firstRow<{ enable_seqscan: string }>(listener, 'SHOW enable_seqscan');
      expect(seqscan).toBe('off');
    } finally {
      await listener.stop(5_000);
    }
  });

  it('read the tasks that arrive after a start on an empty table through indexes, not by scanning it', { timeout: 120_000 }, async () => {
    const TASKS = 20_000;
    const reads = async () => {
      const { rows } = await t.pool.query<{ seq: string; updated: string }>(
        `SELECT seq_tup_read AS seq, n_tup_upd AS updated FROM pg_stat_user_tables WHERE relid = 'leasehold.task'::regclass`,
      );
      return { seq: Number(rows[0]!.seq), updated: Number(rows[0]!.updated) };
    };
    const arrived = defineTask<{ i: number }>('plans.arrived', { handler: () => {} });
    await t.pool.query('TRUNCATE leasehold.task');
    const pool = new pg.Pool({ connectionString: t.url, max: 10 });
    pool.on('error', () => undefined);
    let handled = 0;
    const worker = track(createWorker({ pool, tasks: [arrived], concurrency: 8 }));
    worker.on('task:succeeded', () => void handled++);
    const before = await reads();
    // its first claims see an empty table (and no statistics: no ANALYZE runs here)
    await worker.start();
    for (let from = 0; from < TASKS; from += 1_000) {
      await enqueueMany(t.pool, arrived, Array.from({ length: 1_000 }, (_, i) => ({ payload: { i: from + i } })));
    }
    await expect.poll(() => handled, { timeout: 90_000, interval: 50 }).toBe(TASKS);
    await worker.stop();
    // the worker's sessions end, and report what they did as they do: once every claim's update
    // (each task to processing, on the claim connection) and every write's (to done) is counted,
    // so are the claims' reads
    await pool.end();
    await expect.poll(async () => (await reads()).updated - before.updated, { timeout: 15_000, interval: 100 }).toBeGreaterThanOrEqual(2 * TASKS);
    // a claim planned to scan the table reads it whole at every claim: some 1,400,000 rows for
    // 50,000 tasks when measured; planned on indexes, none
    expect((await reads()).seq - before.seq).toBeLessThan(TASKS);
  });
});
