import { setTimeout as sleep } from 'node:timers/promises';
import type { LeasedTable } from '../leased-table.js';
import { ShutdownError, toError } from '../errors.js';
import type { Executor } from '../sql/execute.js';
import { leaseFinalizeMany, leaseFinalizeManyHanding, settlesGroup, type FinalizeItem, type FinalizeResult } from '../sql/lease-finalize-many.js';
import type { HeadHandoff } from '../sql/lease-claim.js';
import type { Claimed } from '../sql/lease-row.js';
import { leaseReadState, type LeaseState } from '../sql/lease-read-state.js';
import { FEW_ROWS } from '../sql/lease-finalize-few.js';
import { stepsAndDoneWrite } from '../sql/steps-and-done.js';
import type { StepRecord } from '../sql/task-steps.js';
import type { StepRecorder, StepRecordPartner } from '../workflow/step-recorder.js';
import { withTransaction, type TransactionHandle, type TransactionSource } from '../sql/transaction.js';

/** Work that must commit together with a task's fenced completion (follow-up tasks). */
export type CommitHook = (trx: TransactionHandle) => Promise<void>;

/**
 * A fenced finalize to queue, told how it ended. An interface the worker's own per-task object
 * implements, rather than an item and a callback made per task: this runs for every task.
 */
export interface QueuedWrite extends FinalizeItem {
  /** Called once: with the result, or with `error` when the write failed for good. Must not throw. */
  finalized(result: FinalizeResult | undefined, error?: Error): void;
}

/**
 * Where a worker takes the next heads of the ordering groups its writes finish, in the same
 * transaction (see `leaseFinalizeManyHanding`), instead of unblocking them for the next claim.
 */
export interface HeadTaker {
  /** What to ask for now: undefined (or `max` 0) takes none — the worker is stopping, or full. */
  request(): HeadHandoff | undefined;
  /** The heads taken, once the write that took them committed: the worker runs them. Must not throw. */
  take(rows: Claimed<unknown>[]): void;
}

/**
 * A batch with at least this many writes that hand ordering groups their next heads, and twice as
 * many writes in all, goes out as two transactions at once (see {@link Finalizer}).
 */
const SPLIT_SETTLING = 256;

// the worker's room, split between the transactions of one batch
function share(handoff: HeadHandoff | undefined, parts: number): HeadHandoff | undefined {
  return handoff === undefined || parts === 1 ? handoff : { ...handoff, max: Math.floor(handoff.max / parts) };
}

/**
 * Whether a queued write can share a statement with step records (see `stepsAndDoneWrite`): it
 * goes `done` and locks no other row (no ordering group, no parent, no limit's wake-up).
 */
function joinsSteps(item: FinalizeItem): boolean {
  return item.transition.to === 'done' && item.groupKey === null && item.parentId == null && item.limited !== true;
}

/** Whether a batch of queued writes can go in one statement with step records: a few, each {@link joinsSteps}. */
function batchJoinsSteps(batch: readonly FinalizeItem[]): boolean {
  return batch.length > 0 && batch.length <= FEW_ROWS && batch.every(joinsSteps);
}

function settlingCount(batch: readonly FinalizeItem[]): number {
  let n = 0;
  for (const item of batch) if (settlesGroup(item)) n++;
  return n;
}

/**
 * Writes fenced finalizes in batches: while one statement is in flight, the next completions
 * queue up and go out together in the following one, each still checked against its own
 * `lease_version`. Under load that is one statement for many tasks; when idle, a completion
 * goes out at once with no added wait. When the worker has nothing left to run ({@link hurry}),
 * what is queued goes out beside the statement in flight rather than after it.
 *
 * An ordered drain runs in generations: claim every group's head, run them, write them, and only
 * the write's commit makes the next heads claimable. A large batch of such writes is therefore
 * split in two transactions sent together: the first to commit already hands its groups to the
 * next claim while the second is still being written (ordered outbox dispatch over 1,000
 * aggregates +13–20 %, bench/RESULTS.md). The halves share no group (a group has one head in
 * flight), and each takes its locks in the one global order (parents and rows by id, groups by
 * key), so they never wait in a cycle.
 */
export class Finalizer implements StepRecordPartner {
  readonly #pool: Executor & TransactionSource;
  readonly #table: LeasedTable<unknown>;
  readonly #onError: (error: Error) => void;
  #queue: QueuedWrite[] = [];
  #flushing: Promise<void> | undefined;
  /** Whether a statement of {@link #drain} is in flight (not merely about to be sent). */
  #writing = false;
  /** A batch sent by {@link hurry} beside the drain's statement. */
  #hurried: Promise<void> | undefined;
  /** Aborted by {@link abandon}: no retry waits or starts after it. */
  readonly #abandoned = new AbortController();
  #taker: HeadTaker | undefined;
  /** Where this worker's runs queue their step records, while paired (see {@link combineWith}). */
  #steps: StepRecorder | undefined;
  /** Writes of completions together with step records, under way (see {@link writeWithSteps}). */
  readonly #combined = new Set<Promise<unknown>>();

  constructor(pool: Executor & TransactionSource, table: LeasedTable<unknown>, onError: (error: Error) => void) {
    this.#pool = pool;
    this.#table = table;
    this.#onError = onError;
  }

  /** From now on, writes that finish heads of ordering groups take their next heads for `taker`. */
  takeHeads(taker: HeadTaker): void {
    this.#taker = taker;
  }

  /**
   * From now on, a batch of this worker's completions that can go with step records takes the
   * records `steps` has queued into its statement, and `steps` sends its batches with the
   * completions queued here: when some runs end while others record a step, that is one commit
   * instead of two (see `stepsAndDoneWrite`). Returns the unpairing.
   */
  combineWith(steps: StepRecorder): () => void {
    this.#steps = steps;
    const unpair = steps.pair(this);
    return () => {
      unpair();
      if (this.#steps === steps) this.#steps = undefined;
    };
  }

  /**
   * The step recorder's side of {@link combineWith}: writes `steps` with the completions queued
   * here, when every one of them can go with step records and there are at most a few (as at the
   * step's pace of a handful of runs); otherwise undefined, and nothing is taken.
   */
  writeWithSteps(steps: readonly StepRecord[]): Promise<Set<string>> | undefined {
    const queue = this.#queue;
    if (this.#abandoned.signal.aborted || !batchJoinsSteps(queue)) return undefined;
    this.#queue = [];
    return this.#writeCombined(queue, steps);
  }

  /**
   * Queues one fenced finalize; its `finalized` hears whether the fence let it through. Not a
   * promise: this runs once per task, and the caller needs nothing more than the one call.
   */
  enqueue(write: QueuedWrite): void {
    if (this.#abandoned.signal.aborted) return write.finalized(undefined, new ShutdownError());
    this.#queue.push(write);
    this.#flushing ??= this.#drain();
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
    ).then(async (result) => (await this.#refusals([item], [result], false))[0]!);
  }

  /**
   * The worker has no task left to run or start: the queued finalizes go out now, beside the
   * statement in flight, instead of waiting for it (a drain's last completions, and the next head
   * of an ordered group, then wait one statement less). At most one such batch at a time; under
   * load the buffer is never empty, so this adds no statements there.
   */
  hurry(): void {
    if (!this.#writing || this.#hurried !== undefined || this.#queue.length === 0 || this.#abandoned.signal.aborted) return;
    const batch = this.#queue;
    this.#queue = [];
    this.#hurried = this.#writeBatch(batch).finally(() => (this.#hurried = undefined));
  }

  /** Resolves once everything submitted so far is written (or has failed for good). */
  async idle(): Promise<void> {
    while (this.#flushing || this.#hurried || this.#combined.size > 0) await Promise.all([this.#flushing, this.#hurried, ...this.#combined]);
  }

  /**
   * Gives up (a stop's deadline passed): queued writes fail with `ShutdownError` and a write
   * that failed is not tried again. A statement already sent is the pool's to cut.
   */
  abandon(): void {
    this.#abandoned.abort(new ShutdownError());
    for (const p of this.#queue.splice(0)) this.#tell(p, undefined, new ShutdownError());
  }

  #handOver(rows: Claimed<unknown>[]): void {
    try {
      this.#taker!.take(rows);
    } catch (thrown) {
      this.#onError(toError(thrown));
    }
  }

  // a callback that throws (it must not) is reported; it must not fail the rest of its batch
  #tell(write: QueuedWrite, result: FinalizeResult | undefined, error?: Error): void {
    try {
      write.finalized(result, error);
    } catch (thrown) {
      this.#onError(toError(thrown));
    }
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        // Completions of the same tick join the batch: before every batch, not only the first, so
        // the completions of the heads a write just handed over (see takeHeads) go with what
        // queued meanwhile. Sent at once, an ordered drain's writes alternated for good between
        // ~500 rows and the 16 or so that had queued: 70 writes for 20,000 messages, not 40
        await new Promise<void>((r) => setImmediate(r));
        const batch = this.#queue;
        this.#queue = [];
        // taken meanwhile by the step recorder's batch (see writeWithSteps)
        if (batch.length === 0) continue;
        const steps = batchJoinsSteps(batch) ? this.#steps?.takeQueued() : undefined;
        this.#writing = true;
        try {
          if (steps === undefined) await this.#writeBatch(batch);
          else {
            await this.#writeCombined(batch, steps.requests).then(
              (written) => steps.settle(steps.requests.map((step) => written.has(`${step.taskId}/${step.name}`))),
              (error: unknown) => steps.fail(error),
            );
          }
        } finally {
          this.#writing = false;
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  /**
   * Writes `writes` (every one {@link joinsSteps}) and `steps` in one statement, tells each write
   * how it ended, and resolves with the steps written. When the statement fails, the step records
   * fail with it, as a batch of them does alone, and the writes go the usual way as its repeat: it
   * may have committed with its answer lost, and then the fence refuses the repeat, which
   * {@link #refusals} reads as written.
   */
  #writeCombined(writes: readonly QueuedWrite[], steps: readonly StepRecord[]): Promise<Set<string>> {
    const written = (async () => {
      const done = await stepsAndDoneWrite(this.#pool, this.#table, steps, writes).catch((error: unknown) => {
        this.#track(this.#writeTransaction(writes, 1, true));
        throw error;
      });
      const settled = await this.#refusals(writes, done.done, false);
      for (let i = 0; i < writes.length; i++) this.#tell(writes[i]!, settled[i]);
      return done.steps;
    })();
    this.#track(written.catch(() => undefined));
    return written;
  }

  // a write under way that idle() waits for
  #track(write: Promise<unknown>): void {
    this.#combined.add(write);
    void write.finally(() => this.#combined.delete(write));
  }

  /** Writes one batch, split in two when it settles many groups. Never throws. */
  async #writeBatch(batch: readonly QueuedWrite[]): Promise<void> {
    if (batch.length < 2 * SPLIT_SETTLING || settlingCount(batch) < SPLIT_SETTLING) return this.#writeTransaction(batch);
    const half = Math.ceil(batch.length / 2);
    await Promise.all([this.#writeTransaction(batch.slice(0, half), 2), this.#writeTransaction(batch.slice(half), 2)]);
  }

  /** Writes one batch in one statement or transaction and tells each task how it ended. Never throws. */
  async #writeTransaction(batch: readonly QueuedWrite[], parts = 1, repeat = false): Promise<void> {
    try {
      // a repeat: a statement that carried these writes failed, and may have committed
      let retried = repeat;
      // asked once per batch: what the worker has room for now (an attempt whose answer was lost
      // may have taken heads that nobody runs: their leases run out, as a lost claim's do)
      const handoff = this.#taker !== undefined && batch.some(settlesGroup) ? share(this.#taker.request(), parts) : undefined;
      let handed: Claimed<unknown>[] = [];
      const results = await this.#retrying(
        () =>
          handoff === undefined || handoff.max <= 0
            ? leaseFinalizeMany(this.#pool, this.#table, batch)
            : leaseFinalizeManyHanding(this.#pool, this.#table, batch, handoff).then((done) => {
                handed = done.handed;
                return done.results;
              }),
        () => (retried = true),
      );
      const settled = await this.#refusals(batch, results, retried);
      for (let i = 0; i < batch.length; i++) this.#tell(batch[i]!, settled[i]);
      if (handed.length > 0) this.#handOver(handed);
    } catch (error) {
      for (const p of batch) this.#tell(p, undefined, toError(error));
    }
  }

  // What a refusal means, read once for the refused rows (rare: none in a batch, normally):
  // - after a failed attempt (`retried`), the first copy may have committed with its reply lost,
  //   and the fence then refused the repeat. A row still at our token and in the status we wrote
  //   is ours (only a claim moves the token; reap can also write dead at it, and then the row is
  //   dead anyway);
  // - a row `cancelled` at our token was cancelled while its handler finished: no lease was lost.
  async #refusals(items: readonly FinalizeItem[], results: FinalizeResult[], retried: boolean): Promise<FinalizeResult[]> {
    // every batch passes here: nothing allocated when nothing was refused
    if (results.every((r) => r.won)) return results;
    const refused = results.filter((r) => !r.won).map((r) => r.id);
    const now = await leaseReadState(this.#pool, this.#table, refused).catch(() => new Map<string, LeaseState>());
    return results.map((result, i) => {
      const item = items[i]!;
      const state = now.get(item.id);
      if (result.won || state?.leaseVersion !== item.leaseVersion) return result;
      if (retried && state.status === item.transition.to) return { id: item.id, won: true, status: state.status };
      return state.status === 'cancelled' ? { id: item.id, won: false, status: 'cancelled' } : result;
    });
  }

  // A finalize is safe to repeat: the fence makes a second copy lose. Retry through short
  // outages; past that the lease expires and another worker runs the task again.
  async #retrying<T>(write: () => Promise<T>, onRetry: () => void = () => undefined): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (attempt >= 6 || this.#abandoned.signal.aborted) throw toError(error);
        onRetry();
        this.#onError(toError(error));
        await sleep(Math.min(5_000, 100 * 2 ** attempt) * Math.random(), undefined, { signal: this.#abandoned.signal }).catch(() => {
          throw new ShutdownError();
        });
      }
    }
  }
}
