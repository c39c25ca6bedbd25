import { randomUUID } from 'node:crypto';

const KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Outcomes of mutations by idempotency key: the confirmation form carries a fresh key, and a
 * request that repeats it (a double click, a reload of the POST, a retried request) gets the
 * first request's outcome instead of acting again. Kept in memory, the most recent `capacity`.
 */
export class IdempotencyStore<T> {
  readonly #capacity: number;
  readonly #done = new Map<string, Promise<T>>();

  constructor(capacity = 1_000) {
    this.#capacity = capacity;
  }

  /** A key for a new confirmation form. */
  newKey(): string {
    return randomUUID();
  }

  /** Whether `key` has the form {@link newKey} gives. */
  isKey(key: unknown): key is string {
    return typeof key === 'string' && KEY.test(key);
  }

  /** Runs `action` once per key; later calls with the key get the same outcome. */
  run(key: string, action: () => Promise<T>): Promise<T> {
    const known = this.#done.get(key);
    if (known !== undefined) return known;
    const outcome = action();
    this.#done.set(key, outcome);
    if (this.#done.size > this.#capacity) this.#done.delete(this.#done.keys().next().value!);
    return outcome;
  }

  /** The outcome kept for `key`, if any. */
  get(key: string): Promise<T> | undefined {
    return this.#done.get(key);
  }
}
