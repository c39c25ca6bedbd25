// What a workload is, and what one round of it reports.
import type pg from 'pg';
import type { BenchConfig } from './options.js';

/** A number a workload reports, with the target when there is one. */
export interface Metric {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly target?: { readonly op: '>=' | '<='; readonly value: number };
}

/** One round's figures, keyed by {@link Metric.key}, and a sanity check ('ok' or what went wrong). */
export interface RoundResult {
  readonly values: Readonly<Record<string, number>>;
  readonly check: string;
  /** Anything else worth keeping in the JSON output. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** What every workload gets: the configuration and the bench database. */
export interface BenchContext {
  readonly config: BenchConfig;
  /** Connection string of the bench database. */
  readonly url: string;
  /** A small pool on the bench database for set-up, checks and `CHECKPOINT`. */
  readonly admin: pg.Pool;
  readonly log: (message: string) => void;
}

export interface Workload {
  readonly name: string;
  readonly description: (config: BenchConfig) => string;
  readonly metrics: readonly Metric[];
  /** Runs only when `--only` names it: too long for a default run (and CI's `--quick`). */
  readonly onlyWhenNamed?: boolean;
  /** At most this many rounds, whatever `--rounds` says. */
  readonly maxRounds?: number;
  /** Why it cannot run here (e.g. an API that has not landed yet), or null. */
  readonly unavailable?: () => Promise<string | null>;
  /** Once before the rounds (e.g. build a large table). */
  readonly setup?: (ctx: BenchContext) => Promise<void>;
  readonly round: (ctx: BenchContext, round: number) => Promise<RoundResult>;
  /** Once after the rounds, also after a failure. */
  readonly teardown?: (ctx: BenchContext) => Promise<void>;
}
