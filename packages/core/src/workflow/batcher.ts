import type { LeasedTable } from '../leased-table.js';

interface Pending<Req, Res> {
  readonly request: Req;
  readonly resolve: (result: Res) => void;
  readonly reject: (error: unknown) => void;
}

/** Requests taken out of a {@link Batcher}'s queue: `settle` gives each its result, in order, or `fail` rejects them all. */
export interface TakenRequests<Req, Res> {
  readonly requests: readonly Req[];
  settle(results: readonly Res[]): void;
  fail(error: unknown): void;
}

/**
 * Batches the round trips of every workflow running on a pool (their fenced writes, and the
 * replay reads of runs that start together), as the finalizer batches completions: while one
 * round trip is in flight the next requests queue up and go out together, each write still fenced
 * by its own task's token. With many workflows at once that is one round trip (and one commit)
 * for many; alone, a request goes out at once (after the current tick, which the requests made in
 * it join, as do the next requests of the runs the batch before it resumed). `take` picks the
 * next batch from the queue and leaves the rest for the one after (all of it, unless the caller
 * says otherwise).
 * @internal
 */
export class Batcher<Req, Res> {
  readonly #send: (batch: readonly Req[]) => Promise<readonly Res[]>;
  readonly #take: ((queue: readonly Req[]) => number[]) | undefined;
  #queue: Pending<Req, Res>[] = [];
  #draining = false;

  /**
   * `send` makes the round trip for a batch and returns one result per request, in order.
   * `take`, when given, returns the positions in the queue that make the next batch (the others
   * wait for the batch after it).
   */
  constructor(send: (batch: readonly Req[]) => Promise<readonly Res[]>, take?: (queue: readonly Req[]) => number[]) {
    this.#send = send;
    this.#take = take;
  }

  /** Queues one request; resolves with its result, or rejects with its batch's error. */
  submit(request: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      if (!this.#draining) {
        this.#draining = true;
        void this.#drain();
      }
    });
  }

  /**
   * Takes every queued request out of the queue, for a caller that sends them in a round trip of
   * its own (see `StepRecorder`); undefined when none is queued. Requests taken are settled
   * through the returned handle only.
   */
  takeQueued(): TakenRequests<Req, Res> | undefined {
    if (this.#queue.length === 0) return undefined;
    const taken = this.#queue;
    this.#queue = [];
    return {
      requests: taken.map((p) => p.request),
      settle: (results) => taken.forEach((p, i) => p.resolve(results[i]!)),
      fail: (error) => taken.forEach((p) => p.reject(error)),
    };
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        // One turn of the event loop before every batch, not only the first: the requests of this
        // tick join it, and so do the next requests of the runs the previous batch just resumed.
        // Sent at once, what queued meanwhile went alone and the resumed runs waited for it: the
        // runs split into two groups that took turns on the round trip for as long as they ran
        // (8 runs of no-op steps as 3 + 5: twice the statements, half the steps/s; RESULTS.md)
        await new Promise<void>((r) => setImmediate(r));
        const queue = this.#queue;
        // taken meanwhile (see takeQueued)
        if (queue.length === 0) continue;
        let batch = queue;
        if (this.#take === undefined) this.#queue = [];
        else {
          const chosen = new Set(this.#take(queue.map((p) => p.request)));
          batch = queue.filter((_, i) => chosen.has(i));
          this.#queue = queue.filter((_, i) => !chosen.has(i));
        }
        try {
          const results = await this.#send(batch.map((p) => p.request));
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

/**
 * One `make(pool, table)` per pool and table, kept while the pool lives: the batchers of a kind
 * (see {@link Batcher}) share it.
 * @internal
 */
export function perPoolAndTable<P extends object, T>(make: (pool: P, table: LeasedTable<unknown>) => T): (pool: P, table: LeasedTable<unknown>) => T {
  const byPool = new WeakMap<P, Map<string, T>>();
  return (pool, table) => {
    let byTable = byPool.get(pool);
    if (byTable === undefined) byPool.set(pool, (byTable = new Map()));
    const key = `${table.schema}.${table.table}`;
    let made = byTable.get(key);
    if (made === undefined) byTable.set(key, (made = make(pool, table)));
    return made;
  };
}
