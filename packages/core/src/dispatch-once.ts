import { DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import { MAX_DELAY_MS, parseDuration, type Duration } from './duration.js';
import { checkInteger } from './input/integer.js';
import { checkOptionKeys, optionKeys } from './input/options.js';
import { INTEGER_RANGES } from './input/limits.js';
import { LeaseLostError, toError } from './errors.js';
import type { TaskRow } from './leased-table.js';
import { classifyOutcome, type OutcomeKind } from './outcome.js';
import { checkNames, checkOwner, resolveTable, type TableOptions } from './primitives.js';
import type { Executor } from './sql/execute.js';
import { leaseClaim } from './sql/lease-claim.js';
import { leaseFinalizeMany } from './sql/lease-finalize-many.js';
import type { Claimed } from './sql/lease-row.js';
import { transitionFor } from './transition-for.js';

/** Options of {@link dispatchOnce}. */
export interface DispatchOnceOptions<Row> extends TableOptions<Row> {
  owner: string;
  /** Most tasks to claim. @defaultValue 50 */
  batch?: number;
  /** Lease per claim. Keep `batch × slowest handler` well inside it. @defaultValue '60s' */
  lease?: Duration;
  /** Only tasks with these names. */
  names?: readonly string[];
  /** Full-jitter bounds for retryable failures. */
  backoff?: BackoffPolicy;
  /** Deferrals that would make a task older than this send it dead instead. */
  maxDeferAge?: Duration;
  /** Called for every finalize the fence refused. The default logs a warning. */
  onLeaseLost?: (task: Claimed<Row>, error: LeaseLostError) => void;
}

/** What one {@link dispatchOnce} call did, by task. */
export interface DispatchReport {
  readonly claimed: number;
  readonly outcomes: ReadonlyArray<{ readonly id: string; readonly outcome: OutcomeKind; readonly won: boolean }>;
  /** Ids whose finalize the fence refused. */
  readonly lost: string[];
}

const DISPATCH_ONCE_OPTIONS = optionKeys<DispatchOnceOptions<unknown>>()('dispatchOnce', ['schema', 'table', 'owner', 'batch', 'lease', 'names', 'backoff', 'maxDeferAge', 'onLeaseLost']);

/**
 * The design article's `dispatch_once`: claim a batch, run `handler` for each task one after
 * another outside any transaction, classify what it threw four ways, and finalize each with the
 * fence. A refused finalize is reported to `onLeaseLost`, never retried as a failure.
 *
 * @example
 * await dispatchOnce(pool, async (task) => publish(task.id, task.payload), { owner: 'w1' });
 */
export async function dispatchOnce<Row = TaskRow>(
  executor: Executor,
  handler: (task: Claimed<Row>) => Promise<void>,
  options: DispatchOnceOptions<Row>,
): Promise<DispatchReport> {
  checkOptionKeys(options, DISPATCH_ONCE_OPTIONS);
  const owner = checkOwner(options.owner);
  const batch = checkInteger(options.batch ?? 50, 'batch', INTEGER_RANGES.batch);
  const names = checkNames(options.names);
  const leaseMs = parseDuration(options.lease ?? '60s', 'lease');
  const maxDeferAgeMs = options.maxDeferAge === undefined ? null : parseDuration(options.maxDeferAge, 'maxDeferAge', { max: MAX_DELAY_MS });
  const policy = { backoff: options.backoff ?? DEFAULT_BACKOFF, maxDeferAgeMs };
  const onLeaseLost = options.onLeaseLost ?? warnLeaseLost;
  const table = resolveTable(options);

  const { claimed } = await leaseClaim(executor, table, { owner, batch, leaseMs, names });
  const outcomes: DispatchReport['outcomes'][number][] = [];
  const lost: string[] = [];
  for (const task of claimed) {
    let thrown: unknown;
    let threw = false;
    try {
      await handler(task);
    } catch (error) {
      thrown = error;
      threw = true;
    }
    const outcome = classifyOutcome(thrown, threw);
    const transition = transitionFor(outcome, task, policy);
    const [result] = transition
      ? await leaseFinalizeMany(executor, table, [{ id: task.id, leaseVersion: task.leaseVersion, transition, groupKey: task.groupKey }])
      : [undefined];
    const won = result?.won ?? false;
    if (!won) {
      lost.push(task.id);
      onLeaseLost(task, new LeaseLostError(task.id, task.leaseVersion));
    }
    outcomes.push({ id: task.id, outcome: outcome.kind, won });
  }
  return { claimed: claimed.length, outcomes, lost };
}

function warnLeaseLost(task: { id: string; leaseVersion: number }, error: LeaseLostError): void {
  // the effect may already have happened; whoever owns the task now will repeat it, and the
  // task id lets downstream deduplicate
  console.warn(`[leasehold] lost lease: task ${task.id} lease_version ${task.leaseVersion}: ${toError(error).message}`);
}
