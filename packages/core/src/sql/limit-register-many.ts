import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import type { LimitDefinition } from '../limits/define-limit.js';
import { execute, type Executor } from './execute.js';
import { limitStripesReconcile } from './limit-stripes-reconcile.js';

/** One limit as a worker's code declares it, with the task names that run under it there. */
export interface LimitDeclaration {
  readonly limit: LimitDefinition;
  readonly taskNames: readonly string[];
}

/**
 * Records the limits a worker's tasks run under (`<table>_limit`), as its code says them now:
 * creates new ones and overwrites the bounds and task names of existing ones (seen now, by
 * `owner`), keeping their bookkeeping (the leases holding slots, the starts in the window), and
 * keeps each one's slots in stripes or a list as its bounds say (`limitStripesReconcile`). So a
 * bound changed in code applies from the next worker start, to every worker's claims. Then
 * returns the limits this worker claims under: its own, and any other recorded for one of
 * `names` (rows enqueued under a limit the code has since dropped still run, within it).
 *
 * Locks the limits' rows, in name order (as claims do), until the statement's transaction ends.
 */
export async function limitRegisterMany(
  executor: Executor,
  table: LeasedTable<unknown>,
  owner: string,
  limits: readonly LimitDeclaration[],
  names: readonly string[],
): Promise<string[]> {
  const lt = sql.id(table.schema, table.limitTable!);
  if (limits.length > 0) {
    const input = limits.map(({ limit: l, taskNames }) => ({
      name: l.name,
      concurrency: l.concurrency,
      concurrency_per_key: l.concurrencyPerKey,
      rate: l.rate?.limit ?? null,
      rate_period_ms: l.rate?.periodMs ?? null,
      rate_per_key: l.ratePerKey?.limit ?? null,
      rate_per_key_period_ms: l.ratePerKey?.periodMs ?? null,
      task_names: [...taskNames].sort(),
    }));
    await execute(
      executor,
      sql`
        INSERT INTO ${lt} AS l (name, concurrency, concurrency_per_key, rate, rate_period_ms, rate_per_key,
                                rate_per_key_period_ms, task_names, seen_by)
        SELECT d.name, d.concurrency, d.concurrency_per_key, d.rate, d.rate_period_ms, d.rate_per_key,
               d.rate_per_key_period_ms, ARRAY(SELECT jsonb_array_elements_text(d.task_names)), ${owner}
        FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
             AS d(name text, concurrency int, concurrency_per_key int, rate int, rate_period_ms bigint,
                  rate_per_key int, rate_per_key_period_ms bigint, task_names jsonb)
        -- one order for every registering worker and claim, so none deadlock on these rows
        ORDER BY d.name
        ON CONFLICT (name) DO UPDATE
        SET concurrency = EXCLUDED.concurrency, concurrency_per_key = EXCLUDED.concurrency_per_key,
            rate = EXCLUDED.rate, rate_period_ms = EXCLUDED.rate_period_ms,
            rate_per_key = EXCLUDED.rate_per_key, rate_per_key_period_ms = EXCLUDED.rate_per_key_period_ms,
            task_names = EXCLUDED.task_names, seen_at = now(), seen_by = EXCLUDED.seen_by
      `,
      { prepare: false },
    );
    await limitStripesReconcile(executor, table, input.map((l) => l.name));
  }
  const rows = await execute<{ name: string }>(
    executor,
    sql`SELECT name FROM ${lt} WHERE name = ANY(${limits.map((l) => l.limit.name)}::text[]) OR task_names && ${[...names]}::text[] ORDER BY name`,
    { prepare: false },
  );
  return rows.map((r) => r.name);
}
