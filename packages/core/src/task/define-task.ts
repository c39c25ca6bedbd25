import { ConfigError } from '../errors.js';
import { checkInteger } from '../input/integer.js';
import { INTEGER_RANGES } from '../input/limits.js';
import { checkName } from '../input/text.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { isLimitDefinition, type LimitDefinition } from '../limits/define-limit.js';
import type { Duration } from '../duration.js';
import type { JsonPayloadCheck, JsonTypeCheck } from '../input/json-type.js';
import type { PgPoolLike } from '../sql/transaction.js';
import type { HandlerContext } from '../worker/handler-context.js';
import type { SignalDefinition } from '../workflow/define-signal.js';
import type { EventDefinition } from '../workflow/define-event.js';
import type { StepOptions } from '../workflow/step-retry.js';
import type { TaskRef } from '../workflow/task-ref.js';
import type { SignalResult, WaitForSignalOptions } from '../workflow/workflow-run.js';
import type { PgQueryable } from '../sql/execute.js';
import type { EnqueueItemFor } from './enqueue-args.js';
import { runSettings, type RunOptions, type RunSettings } from '../worker/settings.js';
import type { EnqueueOptionsArg } from './enqueue-args.js';

/** Anything with a `parse(input)` that returns the payload or throws, e.g. a zod schema. */
export interface PayloadValidator<P> {
  /** Returns the checked payload, or throws saying what is wrong with `input`. */
  parse(input: unknown): P;
}

/** What a task handler gets besides its payload. */
export interface TaskContext<C = unknown> extends HandlerContext {
  /** The task as claimed. `id` is stable across retries: use it as an idempotency key. */
  readonly task: {
    readonly id: string;
    readonly name: string;
    readonly attempts: number;
    readonly maxAttempts: number;
    readonly leaseVersion: number;
    readonly createdAt: Date;
  };
  /** What an earlier attempt saved with `checkpoint()`, or null on a fresh start. */
  readonly lastCheckpoint: C | null;
  /**
   * Saves progress with a fenced write, so an attempt after a crash resumes from it. Throws
   * `LeaseLostError` (and aborts the signal) when the lease moved on.
   */
  checkpoint(state: C): Promise<void>;
  /**
   * Enqueues a follow-up task that commits atomically with this task's completion: if this
   * task fails, or its lease is lost, the follow-up is never written.
   */
  enqueue<Q, O extends boolean = boolean>(task: TaskDefinition<Q, unknown, O>, payload: NoInfer<Q>, ...options: EnqueueOptionsArg<O>): void;

  // workflows (docs/workflows.md): each of these is recorded under a name unique in the run, with
  // the fence; when the task runs again (a crash, a retry, a wake) a recorded one returns what it
  // recorded without running. Data must be JSON: plain objects, arrays, strings, finite numbers,
  // booleans, null.

  /**
   * Runs `fn` once and records its result: a later run of this task returns the recorded result
   * without calling `fn`. If the process dies after `fn`'s effect and before the record, `fn`
   * runs again: make its effect idempotent (the task id and step name make a good key).
   * `options.retry` calls `fn` again within this run when it throws, before the task's own retry
   * policy takes over.
   *
   * @example
   * const quote = await ctx.step('quote', () => carrier.quote(order), { retry: { maxAttempts: 5 } });
   */
  step<T>(name: string, fn: () => Promise<T> | T, options?: StepOptions): Promise<T>;
  /**
   * Runs `fn` in a transaction on the worker's pool and commits its writes together with the
   * step's record, under the fence: if the lease was lost, everything rolls back. Exactly once,
   * for writes to the database that holds the task table.
   */
  dbStep<T>(name: string, fn: (client: PgQueryable) => Promise<T>): Promise<T>;
  /**
   * {@link dbStep} in a transaction of `db` (a Kysely instance, or a `pg` pool, of the database
   * that holds the task table): `fn` gets its transaction.
   */
  dbStep<T, Trx>(name: string, db: KyselyTransactionSourceOf<Trx>, fn: (trx: Trx) => Promise<T>): Promise<T>;
  /** {@link dbStep} in a transaction on another `pg` pool of the same database. */
  dbStep<T>(name: string, db: PgPoolLike, fn: (client: PgQueryable) => Promise<T>): Promise<T>;
  /**
   * Parks the task for `duration` from this call (or until a `Date`) without holding a slot or
   * spending an attempt; the run ends here (`SuspendedError`) and the task resumes past the sleep.
   */
  sleep(name: string, duration: Duration | Date): Promise<void>;
  /**
   * Enqueues child tasks, once: recorded as a step, committed with the fence. Returns handles for
   * {@link waitForChildren}. Children take enqueue's options except `dedupKey`.
   */
  spawn<Q, O extends boolean, R>(name: string, task: TaskDefinition<Q, unknown, O, R>, items: readonly EnqueueItemFor<NoInfer<Q>, O>[]): Promise<TaskRef<R>[]>;
  /**
   * The children's results, in the order given. While any child of this task is unfinished the
   * task parks (no slot, no attempt spent) and resumes when the last one ends. A dead or
   * cancelled child throws `ChildTaskError`, which the handler may catch to compensate.
   */
  waitForChildren<R>(children: readonly TaskRef<R>[]): Promise<R[]>;
  /**
   * The next `signal` sent to this task (`sendSignal`), or `{ timedOut: true }` once `timeout`
   * has passed since the wait first ran. A signal sent before the wait is kept for it. Parks
   * while it waits.
   */
  waitForSignal<S>(signal: SignalDefinition<S>, options?: WaitForSignalOptions): Promise<SignalResult<S>>;
  /**
   * Publishes where the run stands: sets the task's progress event `event` (a key, or made by
   * `defineEvent`) to `value` (JSON), which `getEvent` reads from anywhere, waking the ones
   * waiting for it. The latest write of a key wins, so a run can move a key on
   * (`'captured'`, then `'approved'`). Recorded like a step, with the fence: a replayed call does
   * not write again, so a rerun never puts an earlier value back.
   *
   * @example
   * await ctx.setEvent(payment, { stage: 'captured' });
   * const approval = await ctx.waitForSignal(approved);   // getEvent shows 'captured' meanwhile
   * await ctx.setEvent(payment, { stage: 'approved' });
   */
  setEvent<T>(event: EventDefinition<T> | string, value: NoInfer<T>): Promise<void>;
  /**
   * Guards a change of the workflow's code for the runs already in flight (docs/workflows.md,
   * "Changing workflow code"): true when this run reaches the call fresh, so it takes the new
   * code; false when the run had already gone past this point on the code before the change, so
   * it takes the old code. Recorded under `patch:<id>`, so the answer stays the same in every
   * later run of the task; a true answer also raises the run's version to this definition's, so
   * workers of older versions no longer claim it. Adding or removing the call moves no step.
   * `leasehold patches` says how many unfinished runs still depend on the old code.
   *
   * @example
   * if (await ctx.patched('send-receipt')) await ctx.step('receipt', () => mailReceipt(order));
   */
  patched(id: string): Promise<boolean>;
}

/** A Kysely instance as `ctx.dbStep` takes it: its transactions are what the step's function gets. */
export interface KyselyTransactionSourceOf<Trx> {
  /** Kysely's transaction builder. */
  transaction(): {
    /** Runs `callback` in a new transaction: commits when it resolves, rolls back when it throws. */
    execute<T>(callback: (trx: Trx) => Promise<T>): Promise<T>;
  };
}

/** Options of {@link defineTask}. */
export interface TaskOptions<P, C = unknown, R = unknown> extends RunOptions {
  /**
   * Runs the task. Throw `PermanentError`, `DeferError` or anything else (retryable). What it
   * returns (JSON) is stored with the task: `getTask`, `waitForResult`, a parent's `waitForChildren`.
   */
  handler: (payload: P, ctx: TaskContext<C>) => Promise<R> | R;
  /** Checks payloads at enqueue and again before running. */
  validate?: PayloadValidator<P>;
  /** Attempts before the task goes dead (a crash counts). @defaultValue 12 */
  maxAttempts?: number;
  /** Higher runs first. @defaultValue 0 */
  priority?: number;
  /** Tasks of one `groupKey` run one at a time in enqueue order; `enqueue` then requires a `groupKey`. @defaultValue false */
  ordered?: boolean;
  /**
   * The limit (`defineLimit`) its tasks run under, alone or with other task types: how many run
   * at once and start per period across all workers. A keyed limit makes `enqueue` require a
   * `limitKey`. @defaultValue none
   */
  limit?: LimitDefinition;
  /**
   * The version of this task's code (docs/workflows.md, "Changing workflow code"): the runs it
   * enqueues carry it, and a worker claims only runs of the versions its definition can run —
   * `version` itself and those in `accepts`. Raise it with a change that runs in flight cannot
   * replay, so that workers of the old and the new code can run side by side during a deploy.
   * @defaultValue 1
   */
  version?: number;
  /**
   * Older versions this code can still run (with `ctx.patched` guarding what changed since);
   * their runs are claimed by this worker too. @defaultValue none
   */
  accepts?: readonly number[];
}

/** A checked task definition: what `enqueue` and `createWorker` take. */
export interface TaskDefinition<P, C = unknown, O extends boolean = boolean, R = unknown> {
  readonly name: string;
  // method syntax on purpose: a list of differently typed tasks is a TaskDefinition<unknown>[]
  /** Runs one task; what it throws decides the outcome (see {@link TaskOptions.handler}). */
  handler(payload: P, ctx: TaskContext<C>): Promise<R> | R;
  readonly validate: PayloadValidator<P> | undefined;
  readonly maxAttempts: number;
  readonly priority: number;
  /** Tasks of one `groupKey` run one at a time; `true` makes `enqueue` require a `groupKey`. */
  readonly ordered: O;
  /** The limit its tasks run under, or null. */
  readonly limit: LimitDefinition | null;
  /** The version its runs start with (see {@link TaskOptions.version}). */
  readonly version: number;
  /** The versions of runs this definition can run, ascending: `version` and `accepts`. */
  readonly runsVersions: readonly number[];
  readonly settings: RunSettings;
}

/**
 * Defines a task type. The payload type (JSON only: `JsonCompatible`) flows from here into `enqueue` and the handler; the
 * result type (what the handler returns) into `waitForResult`, `getTask` and a parent's
 * `ctx.waitForChildren`. Annotate the handler's payload to have both inferred:
 * `defineTask('charge', { handler: async (p: Charge) => ({ chargeId }) })`.
 *
 * @example
 * const sendEmail = defineTask<{ to: string }>('send-email', {
 *   lease: '30s',
 *   handlerTimeout: '20s',
 *   handler: async ({ to }, ctx) => mailer.send(to, { idempotencyKey: ctx.task.id }),
 * });
 */
// an ordered task's definition says so in its type, so that enqueue requires its groupKey
// and a payload type that is not JSON (a Date, a Map, a function…) does not compile: see JsonPayloadCheck
export function defineTask<P, C = unknown, R = unknown>(name: string, options: TaskOptions<P, C, R> & { ordered: true } & JsonPayloadCheck<NoInfer<P>> & JsonTypeCheck<NoInfer<R>, 'result'> & JsonTypeCheck<NoInfer<C>, 'checkpoint'>): TaskDefinition<P, C, true, R>;
export function defineTask<P, C = unknown, R = unknown>(name: string, options: TaskOptions<P, C, R> & { ordered?: false } & JsonPayloadCheck<NoInfer<P>> & JsonTypeCheck<NoInfer<R>, 'result'> & JsonTypeCheck<NoInfer<C>, 'checkpoint'>): TaskDefinition<P, C, false, R>;
export function defineTask<P, C = unknown, R = unknown>(name: string, options: TaskOptions<P, C, R> & JsonPayloadCheck<NoInfer<P>> & JsonTypeCheck<NoInfer<R>, 'result'> & JsonTypeCheck<NoInfer<C>, 'checkpoint'>): TaskDefinition<P, C, boolean, R>;
export function defineTask<P, C = unknown, R = unknown>(name: string, options: TaskOptions<P, C, R>): TaskDefinition<P, C, boolean, R> {
  checkName(name, 'name', 'the task name');
  if (typeof options?.handler !== 'function') {
    throw new ConfigError('handler', `Expected \`handler\` of task "${name}" to be a function`);
  }
  checkOptionKeys(options, TASK_OPTIONS, '', `defineTask "${name}"`);
  if (options.validate !== undefined && typeof options.validate.parse !== 'function') {
    throw new ConfigError('validate', `Expected \`validate\` of task "${name}" to have a parse(input) method`);
  }
  if (options.limit !== undefined && !isLimitDefinition(options.limit)) {
    throw new ConfigError('limit', `Expected \`limit\` of task "${name}" to be made by defineLimit()`);
  }
  const version = checkInteger(options.version ?? 1, 'version', INTEGER_RANGES.version);
  return Object.freeze({
    name,
    handler: options.handler,
    validate: options.validate,
    maxAttempts: checkInteger(options.maxAttempts ?? 12, 'maxAttempts', INTEGER_RANGES.maxAttempts),
    priority: checkInteger(options.priority ?? 0, 'priority', INTEGER_RANGES.priority),
    ordered: options.ordered ?? false,
    limit: options.limit ?? null,
    version,
    runsVersions: runsVersions(name, version, options.accepts),
    settings: runSettings(options),
  });
}

const ENQUEUE_HINT = 'belongs on enqueue: each task sets its own';
const WORKER_HINT = 'belongs on createWorker';
const TASK_OPTIONS = optionKeys<TaskOptions<unknown>>()(
  'defineTask',
  ['handler', 'validate', 'maxAttempts', 'priority', 'ordered', 'limit', 'version', 'accepts', 'lease', 'handlerTimeout', 'backoff', 'maxDeferAge'],
  {
    groupKey: `groupKey ${ENQUEUE_HINT}`,
    dedupKey: `dedupKey ${ENQUEUE_HINT}`,
    limitKey: `limitKey ${ENQUEUE_HINT}`,
    delay: `delay ${ENQUEUE_HINT}`,
    runAt: `runAt ${ENQUEUE_HINT}`,
    schema: `schema ${WORKER_HINT} and enqueue`,
    concurrency: `concurrency ${WORKER_HINT}, or on a limit (defineLimit) shared by tasks`,
    pollInterval: `pollInterval ${WORKER_HINT}`,
    batch: `batch ${WORKER_HINT}`,
  },
);

function runsVersions(name: string, version: number, accepts: unknown): readonly number[] {
  if (accepts === undefined) return Object.freeze([version]);
  if (!Array.isArray(accepts)) throw new ConfigError('accepts', `Expected \`accepts\` of task "${name}" to be an array of versions`);
  const all = new Set([version]);
  accepts.forEach((v: unknown, i) => all.add(checkInteger(v, `accepts[${i}]`, INTEGER_RANGES.version)));
  return Object.freeze([...all].sort((a, b) => a - b));
}
