// What the wake-up tests read of a schema's sleeping workers (core migration 5), and how they wait.
import { sql, type Kysely } from 'kysely';

/** Until when some worker of `leasehold.task` announced it may be asleep, in epoch ms (0: never). */
export async function wakeUntil(db: Kysely<object>): Promise<number> {
  const r = await sql<{ until: string }>`SELECT coalesce(pg_sequence_last_value('leasehold.task_wake'), 0)::text AS until`.execute(db);
  return Number(r.rows[0]!.until);
}

/** The database's clock, in epoch ms. */
export async function serverNow(db: Kysely<object>): Promise<number> {
  const r = await sql<{ now: string }>`SELECT (date_part('epoch', clock_timestamp()) * 1000)::bigint::text AS now`.execute(db);
  return Number(r.rows[0]!.now);
}

/** Polls `test` every 50 ms until it holds; throws naming `what` after `deadlineMs` (generous for a shared 2-core machine). */
export async function waitUntil(what: string, test: () => Promise<boolean>, deadlineMs = 20_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`not within ${deadlineMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
