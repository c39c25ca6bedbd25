/**
 * Runs tasks at most `concurrency` at a time, and one at a time per key in the order they
 * were pushed: events of one aggregate are applied in the order they arrived, events of
 * different aggregates in parallel. A task that throws does not stop its lane. @internal
 */
export class KeyedLanes {
  readonly #concurrency: number;
  readonly #tails = new Map<string, Promise<void>>();
  readonly #waiters: Array<() => void> = [];
  #running = 0;

  constructor(concurrency: number) {
    this.#concurrency = concurrency;
  }

  /** Queues `task` behind `key`'s earlier tasks; resolves once it holds a slot (backpressure). */
  async push(key: string, task: () => Promise<void>): Promise<void> {
    while (this.#running >= this.#concurrency) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#running++;
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const run: Promise<void> = previous
      .then(task)
      .catch(() => undefined)
      .finally(() => {
        this.#running--;
        this.#waiters.shift()?.();
        if (this.#tails.get(key) === run) this.#tails.delete(key);
      });
    this.#tails.set(key, run);
  }

  /** Resolves when every task pushed so far has ended. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()]);
  }
}
