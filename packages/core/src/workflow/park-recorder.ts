import type { LeasedTable } from '../leased-table.js';
import type { PgQueryable } from '../sql/execute.js';
import { taskParkMany, type ParkRequest, type ParkResult } from '../sql/task-park-many.js';

interface Pending {
  readonly request: ParkRequest;
  readonly resolve: (result: ParkResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Records and parks the sleeps, signal waits and children waits of every workflow running on a
 * pool in batches, as {@link StepRecorder} writes steps: while one write is in flight the next
 * waits queue up and go out together, one round trip for all of them (see taskParkMany), each
 * fenced by its own task's token. A batch holds one wait per task: a second wait of the same run
 * (calls made together) goes in the next batch, so it finds what the first did, as it would one
 * after the other.
 * @internal
 */
export class ParkRecorder {
  static readonly #byPool = new WeakMap<PgQueryable, Map<string, ParkRecorder>>();
  readonly #pool: PgQueryable;
  readonly #table: LeasedTable<unknown>;
  #queue: Pending[] = [];
  #draining = false;

  private constructor(pool: PgQueryable, table: LeasedTable<unknown>) {
    this.#pool = pool;
    this.#table = table;
  }

  /** The recorder of `table`'s waits on `pool`, made on first use. */
  static of(pool: PgQueryable, table: LeasedTable<unknown>): ParkRecorder {
    let byTable = ParkRecorder.#byPool.get(pool);
    if (byTable === undefined) ParkRecorder.#byPool.set(pool, (byTable = new Map()));
    const key = `${table.schema}.${table.table}`;
    let recorder = byTable.get(key);
    if (recorder === undefined) byTable.set(key, (recorder = new ParkRecorder(pool, table)));
    return recorder;
  }

  /** Records one wait and parks its task unless the wait is over; `lost` when the fence refused. */
  park(request: ParkRequest): Promise<ParkResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      if (!this.#draining) {
        this.#draining = true;
        void this.#drain();
      }
    });
  }

  async #drain(): Promise<void> {
    try {
      // let the waits of the same tick join the first batch
      await new Promise<void>((r) => setImmediate(r));
      while (this.#queue.length > 0) {
        const batch: Pending[] = [];
        const later: Pending[] = [];
        const tasks = new Set<string>();
        for (const p of this.#queue) {
          if (tasks.has(p.request.taskId)) later.push(p);
          else {
            tasks.add(p.request.taskId);
            batch.push(p);
          }
        }
        this.#queue = later;
        try {
          const results = await taskParkMany(this.#pool, this.#table, batch.map((p) => p.request));
          batch.forEach((p, i) => p.resolve(results[i]!));
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.#draining = false;
    }
  }
}
