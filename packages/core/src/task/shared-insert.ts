import type { LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { taskInsertMany, type InsertedTask, type TaskInsert } from '../sql/task-insert-many.js';

/** Most rows one shared statement carries. */
const MAX_ROWS = 1_000;

interface Waiting {
  readonly row: TaskInsert;
  readonly resolve: (task: InsertedTask) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Single enqueues on one `pg` pool, each its own transaction, share statements: a call made while
 * an earlier one is in flight waits for it, then goes out with every call that arrived meanwhile
 * as one multi-row INSERT, one round trip and one commit. A lone call goes out at once, so nobody
 * waits longer than one statement; under concurrency the round trips and commits per task fall
 * with the number of callers (a commit is a WAL flush, the largest cost of a small insert).
 * Only rows that cannot wait for a lock are shared (no group, no dedup key), so one caller's
 * statement never holds up another's. A statement that fails rejects every call it carried, and
 * none of their rows is written.
 */
class SharedInsert {
  readonly #pool: Executor;
  readonly #table: LeasedTable<unknown>;
  readonly #waiting: Waiting[] = [];
  #busy = false;

  constructor(pool: Executor, table: LeasedTable<unknown>) {
    this.#pool = pool;
    this.#table = table;
  }

  insert(row: TaskInsert): Promise<InsertedTask> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ row, resolve, reject });
      if (!this.#busy) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#busy = true;
    try {
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, MAX_ROWS);
        try {
          const inserted = await taskInsertMany(this.#pool, this.#table, batch.map((w) => w.row));
          for (let i = 0; i < batch.length; i++) batch[i]!.resolve(inserted[i]!);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
        // Callers this statement resolved often enqueue again at once (a loop, a request that
        // adds several tasks): let them join the next statement. Sent at once, the first of them
        // went out alone and the rest waited for it: with 8 callers, statements alternated
        // between 1 row and 7.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#busy = false;
    }
  }
}

const byPool = new WeakMap<object, Map<string, SharedInsert>>();

/**
 * Inserts one plain row (no group, no dedup key) through `pool`'s shared statements (see
 * {@link SharedInsert}). @internal
 */
export function sharedInsert(pool: Executor, table: LeasedTable<unknown>, row: TaskInsert): Promise<InsertedTask> {
  let tables = byPool.get(pool);
  if (tables === undefined) byPool.set(pool, (tables = new Map()));
  const key = `${table.schema}.${table.table}`;
  let shared = tables.get(key);
  if (shared === undefined) tables.set(key, (shared = new SharedInsert(pool, table)));
  return shared.insert(row);
}
