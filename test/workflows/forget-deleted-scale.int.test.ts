// Deleting tasks deletes their steps and signals (core migration 8's delete trigger). Signals were
// indexed only while unconsumed, so each purge batch read every signal ever sent; with statistics
// taken while the tables were empty, every step too. Core migration 10 indexes the signals by
// task and probes both tables by the deleted ids. Counted from the purge transaction's own table
// statistics (sequential reads and index fetches), since the trigger's statements do not show in
// a plan.
import { sql } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { leasePurgeDone, taskTable } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const OTHER_TASKS = 5_000;
const SIGNALS_EACH = 20; // 100,000 signals and steps of tasks that stay
const PURGED = 500;

interface Reads { readonly seq: number; readonly fetched: number }

/**
 * What the open transaction on `client` has read of `relation` so far: its own counts only, so a
 * count another connection flushes late (PostgreSQL 15 flushes a backend's at most once a second,
 * else when it idles) cannot land inside the window, as a test's closing `count(*)` once did.
 */
async function readsInTransaction(client: pg.Client, relation: string): Promise<Reads> {
  const { rows } = await client.query<{ seq: string; idx: string | null }>(
    `SELECT seq_tup_read AS seq, idx_tup_fetch AS idx FROM pg_stat_xact_user_tables WHERE schemaname = 'leasehold' AND relname = $1`,
    [relation],
  );
  return { seq: Number(rows[0]!.seq), fetched: Number(rows[0]!.idx ?? 0) };
}

async function history(): Promise<void> {
  await sql`INSERT INTO leasehold.task (name, payload, status, attempts)
            SELECT 'stays', '{}', 'waiting', 1 FROM generate_series(1, ${OTHER_TASKS}::int)`.execute(t.db);
  await sql`INSERT INTO leasehold.task (name, payload, status, attempts, done_at)
            SELECT 'old', '{}', 'done', 1, now() - interval '30 days' FROM generate_series(1, ${PURGED}::int)`.execute(t.db);
  // every task has signals (consumed) and steps; the purged ones two of each
  await sql`INSERT INTO leasehold.task_signal (task_id, name, payload, consumed_at)
            SELECT id, 'go', '{}', now() FROM leasehold.task
            CROSS JOIN generate_series(1, CASE WHEN name = 'stays' THEN ${SIGNALS_EACH}::int ELSE 2 END)`.execute(t.db);
  await sql`INSERT INTO leasehold.task_step (task_id, name, done, lease_version)
            SELECT id, 'step-' || n, true, 1 FROM leasehold.task
            CROSS JOIN generate_series(1, CASE WHEN name = 'stays' THEN ${SIGNALS_EACH}::int ELSE 2 END) AS n`.execute(t.db);
}

describe('deleting tasks deletes their steps and signals at the cost of what it deletes', () => {
  for (const stats of ['from empty tables', 'current'] as const) {
    it(`a purge batch of ${PURGED} beside ${(OTHER_TASKS * SIGNALS_EACH).toLocaleString('en')} signals and steps of other tasks, statistics ${stats}`, async () => {
      await sql`TRUNCATE leasehold.task RESTART IDENTITY`.execute(t.db);
      for (const table of ['task', 'task_step', 'task_signal']) await sql`ALTER TABLE ${sql.id('leasehold', table)} SET (autovacuum_enabled = false)`.execute(t.db);
      if (stats === 'from empty tables') await sql`ANALYZE leasehold.task, leasehold.task_step, leasehold.task_signal`.execute(t.db);
      await history();
      if (stats === 'current') await sql`ANALYZE leasehold.task, leasehold.task_step, leasehold.task_signal`.execute(t.db);

      // the purge in a transaction of the test's (it runs on a client as one statement), so that
      // the reads counted are its own, its trigger's statements included
      const purger = await t.client();
      await purger.query('BEGIN');
      const before = { signals: await readsInTransaction(purger, 'task_signal'), steps: await readsInTransaction(purger, 'task_step') };
      expect(await leasePurgeDone(purger, taskTable(), 7 * 86_400_000, PURGED)).toBe(PURGED);
      const after = { signals: await readsInTransaction(purger, 'task_signal'), steps: await readsInTransaction(purger, 'task_step') };
      await purger.query('COMMIT');

      const { rows: left } = await sql<{ signals: string; steps: string }>`
        SELECT (SELECT count(*) FROM leasehold.task_signal) AS signals, (SELECT count(*) FROM leasehold.task_step) AS steps`.execute(t.db);
      expect(left[0]).toEqual({ signals: String(OTHER_TASKS * SIGNALS_EACH), steps: String(OTHER_TASKS * SIGNALS_EACH) });
      for (const [kind, relation] of [['signals', after.signals], ['steps', after.steps]] as const) {
        const read = relation.seq - before[kind].seq + relation.fetched - before[kind].fetched;
        expect(read, `${kind} read`).toBeLessThanOrEqual(10 * PURGED);
        expect(relation.fetched - before[kind].fetched, `${kind} fetched by index`).toBeGreaterThanOrEqual(2 * PURGED);
      }
    });
  }
});
