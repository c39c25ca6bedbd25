import type { LeasedTable } from '../leased-table.js';
import { toError } from '../errors.js';
import type { Executor } from '../sql/execute.js';
import { leaseFinalizeMany, type FinalizeItem, type FinalizeResult } from '../sql/lease-finalize-many.js';
import { withTransaction, type TransactionHandle, type TransactionSource } from '../sql/transaction.js';

/** Work that must commit together with a task's fenced completion (follow-up tasks). */
export type CommitHook = (trx: TransactionHandle) => Promise<void>;

interface Pending {
  readonly item: FinalizeItem;
  readonly resolve: (result: FinalizeResult) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Writes fenced finalizes in batches: while one statement is in flight, the next completions
 * queue up and go out together in the following one, each still checked against its own
 * `lease_version`. Under load that is one statement for many tasks; when idle, a completion
 * goes out at once with no added wait.
 */
export class Finalizer {
  readonly #pool: Executor & TransactionSource;
  readonly #table: LeasedTable<unknown>;
  readonly #onError: (error: Error) => void;
  #queue: Pending[] = [];
  #flushing: Promise<void> | undefined;

  constructor(pool: Executor & TransactionSource, table: LeasedTable<unknown>, onError: (error: Error) => void) {
    this.#pool = pool;
    this.#table = table;
    this.#onError = onError;
  }

  /** Queues one fenced finalize; resolves with whether the fence let it through. */
  submit(item: FinalizeItem): Promise<FinalizeResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#flushing ??= this.#drain();
    });
  }

  /**
   * Finalizes one task together with `hooks`, in one transaction: the hooks run only when the
   * fence let the finalize through, and roll back with it otherwise.
   */
  async submitWithHooks(item: FinalizeItem, hooks: readonly CommitHook[]): Promise<FinalizeResult> {
    return this.#retrying(() =>
      withTransaction(this.#pool, async (trx) => {
        const [result] = await leaseFinalizeMany(trx, this.#table, [item]);
        if (!result?.won) return { id: item.id, won: false, status: null };
        for (const hook of hooks) await hook(trx);
        return result;
      }),
    );
  }

  /** Resolves once everything submitted so far is written (or has failed for good). */
  async idle(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #drain(): Promise<void> {
    try {
      // let completions of the same tick join the first batch
      await new Promise<void>((r) => setImmediate(r));
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        try {
          const results = await this.#retrying(() => leaseFinalizeMany(this.#pool, this.#table, batch.map((p) => p.item)));
          results.forEach((result, i) => batch[i]!.resolve(result));
        } catch (error) {
          for (const p of batch) p.reject(toError(error));
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  // A finalize is safe to repeat: the fence makes a second copy lose. Retry through short
  // outages; past that the lease expires and another worker runs the task again.
  async #retrying<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (attempt >= 6) throw toError(error);
        this.#onError(toError(error));
        await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt) * Math.random()));
      }
    }
  }
}
