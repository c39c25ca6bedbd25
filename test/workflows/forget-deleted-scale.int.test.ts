// Deleting tasks deletes their steps and signals (core migration 8's delete trigger). Signals were
// indexed only while unconsumed, so each purge batch read every signal ever sent; with statistics
// taken while the tables were empty, every step too. Core migration 10 indexes the signals by
// task and probes both tables by the deleted ids. Counted from the tables' own statistics
// (sequential reads and index fetches), since the trigger's statements do not show in a plan.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { leasePurgeDone, taskTable } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const OTHER_TASKS = 5_000;
const SIGNALS_EACH = 20; // 100,000 signals and steps of tasks that stay
const PURGED = 500;

interface Reads { readonly seq: number; readonly fetched: number }

async function reads(relation: string): Promise<Reads> {
  await sql`SELECT pg_stat_clear_snapshot()`.execute(t.db);
  const { rows } = await sql<{ seq: string; idx: string | null }>`
    SELECT seq_tup_read AS seq, idx_tup_fetch AS idx FROM pg_stat_user_tables
    WHERE schemaname = 'leasehold' AND relname = ${relation}`.execute(t.db);
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

      const purger = await t.client();
      const before = { signals: await reads('task_signal'), steps: await reads('task_step') };
      // the purge's statement ends its transaction; its backend's counts reach the statistics then
      await purger.query('SELECT pg_stat_force_next_flush()');
      expect(await leasePurgeDone(purger, taskTable(), 7 * 86_400_000, PURGED)).toBe(PURGED);
      await purger.query('SELECT pg_stat_force_next_flush()');
      await purger.query('SELECT 1');
      const after = { signals: await reads('task_signal'), steps: await reads('task_step') };

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
