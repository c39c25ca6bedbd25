import type { LeasedTable } from '../leased-table.js';
import type { Executor } from './execute.js';
import { leasePurgeFinished } from './lease-purge-finished.js';

/**
 * Retention: deletes at most `limit` `done` rows finished more than `olderThanMs` ago (by the
 * database's clock), oldest first, and returns how many it deleted. Unfinished and dead rows are
 * never touched, nor a done child whose parent has not ended, nor a row someone waits for that
 * ended within the last hour (see `docs/operations.md`, "Retention").
 *
 * Locks: at most `limit` rows, `FOR UPDATE SKIP LOCKED`, so it never waits for a row another
 * purge (or anyone) holds and never holds more than one batch. Call it in a loop, each call its
 * own short statement, until it returns less than `limit`. Walks the `<table>_done_at` index from
 * its oldest entry, so a batch reads about `limit` rows however many are older than the cutoff
 * (how the statement keeps its plan to that: see `leasePurgeFinished`).
 *
 * Workers do this by default (`retention` of `createWorker`); this is for one-off use.
 *
 * @example
 * while ((await leasePurgeDone(pool, taskTable(), 7 * 86_400_000, 1_000)) === 1_000);
 */
export function leasePurgeDone(executor: Executor, table: LeasedTable<unknown>, olderThanMs: number, limit: number): Promise<number> {
  return leasePurgeFinished(executor, table, 'done', olderThanMs, limit);
}
