import { sql } from 'kysely';
import { execute, type Executor } from './execute.js';
import { withTransaction, type TransactionSource } from './transaction.js';

/**
 * Runs `fn`'s statements with the server's JIT compilation off, when the executor lets us open a
 * transaction of our own (a pool, or a Kysely instance): `BEGIN`, `SET LOCAL jit = off`, the
 * statements, `COMMIT` — no session state outlives it, so it is pooler-safe. In a transaction or
 * on a client the caller gives, `fn` runs as it is, on it.
 *
 * Why: PostgreSQL compiles a statement whose estimated cost passes `jit_above_cost` (100,000 by
 * default), and inlines and optimises past 500,000. Statements that read a few hundred rows
 * through a partial index but whose estimates come from stale or hidden figures (a purge batch's
 * hidden limit, the stats' partial indexes right after a burst) passed those: 0.3–1 s of
 * compiling for 5–30 ms of work, at every call.
 * @internal
 */
export async function withoutJit<T>(executor: Executor, fn: (on: Executor, own: boolean) => Promise<T>): Promise<T> {
  const source = ownTransactions(executor);
  if (source === undefined) return fn(executor, false);
  return withTransaction(source, async (trx) => {
    await execute(trx, sql`SET LOCAL jit = off`);
    return fn(trx, true);
  });
}

/**
 * In a transaction of our own (`own`, from {@link withoutJit}): no sequential scans for the rest
 * of it, so statements spelled to read partial indexes read them whatever the planner's
 * statistics say. Right after a burst of 200,000 tasks beside 10,000,000 done rows, the stats'
 * count of the ready rows, planned with statistics that still saw the burst, was a parallel
 * scan of the whole table (1.3 s) instead of its partial index (a few ms, empty by then).
 * Sample scans are not sequential scans: a sample still reads its pages.
 * @internal
 */
export async function indexesOnly(on: Executor, own: boolean): Promise<void> {
  if (own) await execute(on, sql`SET LOCAL enable_seqscan = off`);
}

/** The executor as a source of transactions of our own: a pool or a Kysely instance outside a transaction. */
function ownTransactions(executor: Executor): TransactionSource | undefined {
  const candidate = executor as { isTransaction?: unknown; connect?: unknown; connectionParameters?: unknown; getExecutor?: unknown };
  if (typeof candidate.isTransaction === 'boolean') return candidate.isTransaction ? undefined : (executor as unknown as TransactionSource);
  if (typeof candidate.connect === 'function' && candidate.connectionParameters === undefined && typeof candidate.getExecutor !== 'function') {
    return executor as unknown as TransactionSource;
  }
  return undefined;
}
