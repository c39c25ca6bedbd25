import { toError } from '../errors.js';
import type { LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { leaseExtendMany, type ExtendItem } from '../sql/lease-extend-many.js';
import { leaseReadState } from '../sql/lease-read-state.js';
import { tokenKey } from '../sql/lease-row.js';

/**
 * Keeps the leases of a worker's in-flight tasks alive: every `intervalMs`, one fenced
 * statement extends all of them, each by its own lease length. A task missing from the result
 * has lost its lease (its token moved on) and is reported through `onLost`; one whose row another
 * transaction holds (this worker's own write of it, most often) is left for the next tick.
 */
export class Heartbeat {
  readonly #executor: Executor;
  readonly #table: LeasedTable<unknown>;
  readonly #intervalMs: number;
  readonly #inFlight: () => ExtendItem[];
  readonly #onLost: (item: ExtendItem, cancelled: boolean) => void;
  readonly #onError: (error: Error) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(options: {
    executor: Executor;
    table: LeasedTable<unknown>;
    intervalMs: number;
    inFlight: () => ExtendItem[];
    /** `cancelled`: the row is `cancelled` at this token (`cancelTask`), not taken over. */
    onLost: (item: ExtendItem, cancelled: boolean) => void;
    onError: (error: Error) => void;
  }) {
    this.#executor = options.executor;
    this.#table = options.table;
    this.#intervalMs = options.intervalMs;
    this.#inFlight = options.inFlight;
    this.#onLost = options.onLost;
    this.#onError = options.onError;
  }

  start(): void {
    this.#timer ??= setInterval(() => {
      // a slow tick is not stacked on by the next one
      this.#running ??= this.tick().finally(() => (this.#running = undefined));
    }, this.#intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One heartbeat now: extends every in-flight lease in one statement. */
  async tick(): Promise<void> {
    const items = this.#inFlight();
    if (items.length === 0) return;
    let extended: Map<string, Date | null>;
    try {
      // never waits for a row lock: a busy row is being written, and that write tells its fate
      extended = await leaseExtendMany(this.#executor, this.#table, items, { skipLocked: true });
    } catch (error) {
      this.#onError(toError(error));
      return;
    }
    const lost = items.filter((item) => !extended.has(tokenKey(item)));
    if (lost.length === 0) return;
    // why: a cancel leaves the token where it was; a takeover moves it
    const now = await leaseReadState(this.#executor, this.#table, lost.map((i) => i.id)).catch((error: unknown) => {
      this.#onError(toError(error));
      return undefined;
    });
    for (const item of lost) {
      const state = now?.get(item.id);
      this.#onLost(item, state?.status === 'cancelled' && state.leaseVersion === item.leaseVersion);
    }
  }
}
