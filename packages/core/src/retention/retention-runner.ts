import type { LeasedTable } from '../leased-table.js';
import type { Executor } from '../sql/execute.js';
import { leasePurgeFinished, type FinishedStatus } from '../sql/lease-purge-finished.js';
import { retentionTakeTurn } from '../sql/retention-turn.js';
import type { RetentionSettings } from './retention-options.js';

/** What one retention turn deleted: the payload of `retention:purged`. */
export interface RetentionReport {
  /** `schema.table` */
  readonly table: string;
  /** Rows deleted per status, with their steps and signals. */
  readonly deleted: Readonly<Record<'done' | 'cancelled' | 'dead', number>>;
  /** DELETE statements run. */
  readonly batches: number;
  /** How long the turn took, from taking it to its last batch. */
  readonly durationMs: number;
  /** The turn ended on its time budget (one interval) with rows still due: the next turn goes on. */
  readonly behind: boolean;
}

/** What a {@link RetentionRunner} works with. @internal */
export interface RetentionRunnerOptions {
  readonly db: Executor;
  readonly table: LeasedTable<unknown>;
  readonly owner: string;
  readonly settings: RetentionSettings;
  /** A turn that deleted anything. */
  readonly onPurged: (report: RetentionReport) => void;
  readonly onError: (error: Error) => void;
}

/**
 * One worker's share of retention: about once per interval (jittered, so a fleet started together
 * spreads out) it tries to take the table's turn in the database, and when it gets it, deletes
 * what is due in batches, each its own statement, until a batch comes back short or the turn has
 * used its interval. Between batches nothing is held; a stop waits for the batch in flight only.
 * @internal
 */
export class RetentionRunner {
  readonly #o: RetentionRunnerOptions;
  #timer: NodeJS.Timeout | undefined;
  #turn: Promise<void> | undefined;
  #stopped = false;

  constructor(options: RetentionRunnerOptions) {
    this.#o = options;
  }

  start(): void {
    this.#schedule();
  }

  /** No new batch starts; resolves once the one in flight (if any) has answered. */
  stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    return this.#turn ?? Promise.resolve();
  }

  #schedule(): void {
    if (this.#stopped) return;
    const { everyMs } = this.#o.settings;
    this.#timer = setTimeout(() => {
      this.#turn = this.#attempt().finally(() => {
        this.#turn = undefined;
        this.#schedule();
      });
    }, everyMs * (0.5 + Math.random() / 2));
    this.#timer.unref();
  }

  async #attempt(): Promise<void> {
    const { db, table, owner, settings } = this.#o;
    try {
      if (!(await retentionTakeTurn(db, table, owner, settings.everyMs))) return;
      const started = performance.now();
      const until = started + settings.everyMs;
      const deleted: Record<FinishedStatus, number> = { done: 0, cancelled: 0, dead: 0 };
      let batches = 0;
      let behind = false;
      for (const [status, ageMs] of settings.ages) {
        for (;;) {
          if (this.#stopped) return this.#report(deleted, batches, started, true);
          if (performance.now() >= until) {
            behind = true;
            break;
          }
          const n = await leasePurgeFinished(db, table, status, ageMs, settings.batchSize);
          batches++;
          deleted[status] += n;
          if (n < settings.batchSize) break;
        }
      }
      this.#report(deleted, batches, started, behind);
    } catch (error) {
      if (!this.#stopped) this.#o.onError(error instanceof Error ? error : new Error(String(error)));
    }
  }

  #report(deleted: Record<FinishedStatus, number>, batches: number, started: number, behind: boolean): void {
    if (deleted.done + deleted.cancelled + deleted.dead === 0) return;
    const { table } = this.#o;
    this.#o.onPurged({
      table: `${table.schema}.${table.table}`,
      deleted: Object.freeze({ ...deleted }),
      batches,
      durationMs: Math.round(performance.now() - started),
      behind,
    });
  }
}
