import { sql } from 'kysely';
import type { LeasedTable } from '../leased-table.js';
import { execute } from '../sql/execute.js';
import { tableRef } from '../sql/table-ref.js';
import type { PgPoolLike } from '../sql/transaction.js';

/**
 * How many of its pool's connections a starting worker opens: about as many as its statements use
 * at once under load (a claim's follow-up, a write of completions, a batch of step records or
 * parks, a heartbeat).
 */
export const WARM_CONNECTIONS = 4;

/** pg's `Pool` default `max`, for a pool that does not say. */
const PG_DEFAULT_MAX = 10;

/**
 * Opens up to {@link WARM_CONNECTIONS} of the pool's connections at once — at most one fewer than
 * the pool's `max`, so that the warm-up alone never fills a small pool — and reads the table once
 * on each (a statement by primary key that finds nothing), so that the first tasks' writes pay
 * neither for a connection's start nor for its backend's first look at the table's catalog. Cold,
 * the first step records of a workflow run took 35–45 ms where later ones took 5
 * (bench/RESULTS.md). Never throws: a connection that cannot be had here fails where it is used,
 * and is reported there.
 * @internal
 */
export async function warmPool(pool: PgPoolLike, max: number | undefined, table: LeasedTable<unknown>): Promise<void> {
  const n = Math.min(WARM_CONNECTIONS, (max ?? PG_DEFAULT_MAX) - 1);
  if (n <= 0) return;
  await Promise.all(
    Array.from({ length: n }, async () => {
      const client = await pool.connect().catch(() => undefined);
      if (client === undefined) return;
      try {
        await execute(client, sql`SELECT 1 FROM ${tableRef(table)} WHERE id = -1`, { prepare: false });
        client.release();
      } catch (error) {
        client.release(error instanceof Error ? error : true);
      }
    }),
  );
}
