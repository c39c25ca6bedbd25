import { MAX_DELAY_MS, parseDuration, type Duration } from '../duration.js';
import { CancelledError, ChildTaskError, ConfigError, LeaseLostError, PermanentError, SuspendedError, type ChildFailure } from '../errors.js';
import { checkName } from '../input/text.js';
import type { LeasedTable, TaskRow } from '../leased-table.js';
import { leaseReadState } from '../sql/lease-read-state.js';
import type { Claimed } from '../sql/lease-row.js';
import { taskInsertMany } from '../sql/task-insert-many.js';
import {
  taskChildrenRead,
  taskFenceLock,
  taskHasOpenChildren,
  taskPark,
  taskSignalTake,
  taskStepOpen,
  taskStepRecord,
  taskStepsRead,
  type RecordedStep,
} from '../sql/task-steps.js';
import { withTransaction, type PgPoolLike, type TransactionHandle, type TransactionSource } from '../sql/transaction.js';
import type { TaskDefinition } from '../task/define-task.js';
import type { EnqueueItem } from '../task/enqueue.js';
import { prepareInserts } from '../task/enqueue.js';
import { withSpan, type SpanOptions } from '../telemetry/with-span.js';
import { runnerControl, type HandlerContext } from '../worker/handler-context.js';
import { checkSignal, type SignalDefinition } from './define-signal.js';
import { recordedJson } from './json-value.js';
import { StepRecorder } from './step-recorder.js';
import type { TaskRef } from './task-ref.js';

/** What `ctx.waitForSignal` resumes with: the signal's payload, or the wait's timeout. */
export type SignalResult<S> = { readonly timedOut: false; readonly payload: S } | { readonly timedOut: true };

/** Options of `ctx.waitForSignal`. */
export interface WaitForSignalOptions {
  /** Resume with `{ timedOut: true }` after this long (counted from the wait's first run). @defaultValue no timeout */
  timeout?: Duration;
  /** The step name the wait is recorded under. @defaultValue `signal:<signal name>` */
  step?: string;
}

type Outcome<T> = { readonly kind: 'continue'; readonly value: T } | { readonly kind: 'parked'; readonly waitFor: string } | { readonly kind: 'lost' };

/**
 * One run of a task's handler as a workflow: the steps it recorded before (read once, on the
 * first step), the names used in this run, and the fenced writes of its steps, sleeps, children
 * and waits. A wait that cannot end now parks the task in the same transaction that checked it
 * and ends the run (`SuspendedError`); the task runs again from the top when the wait ends, and
 * every recorded step then returns its stored result without running.
 * @internal
 */
export class WorkflowRun {
  readonly #pool: PgPoolLike;
  readonly #table: LeasedTable<TaskRow>;
  readonly #task: Claimed<TaskRow>;
  readonly #ctx: HandlerContext;
  #recorded: Promise<Map<string, RecordedStep>> | undefined;
  readonly #used = new Set<string>();

  constructor(pool: PgPoolLike, table: LeasedTable<TaskRow>, task: Claimed<TaskRow>, ctx: HandlerContext) {
    this.#pool = pool;
    this.#table = table;
    this.#task = task;
    this.#ctx = ctx;
  }

  async step<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
    const step = this.#claim(name, 'name');
    if (typeof fn !== 'function') throw new ConfigError('fn', `Expected step "${step}" to be given a function`);
    const recorded = await this.#lookup(step);
    if (recorded?.done) return recorded.result as T;
    this.#live();
    return withSpan(`step ${step}`, this.#spanOptions(step, 'step'), async () => {
      const value = await fn();
      const json = recordedJson(value, `the result of step "${step}"`);
      const task = this.#task;
      const written = await StepRecorder.of(this.#pool, this.#table).record({ taskId: task.id, leaseVersion: task.leaseVersion, name: step, resultJson: json });
      if (!written) throw await this.#refused(`step "${step}"`);
      return value;
    });
  }

  async dbStep<T>(name: string, source: TransactionSource | undefined, fn: (trx: TransactionHandle) => Promise<T>): Promise<T> {
    const step = this.#claim(name, 'name');
    if (typeof fn !== 'function') throw new ConfigError('fn', `Expected database step "${step}" to be given a function`);
    const recorded = await this.#lookup(step);
    if (recorded?.done) return recorded.result as T;
    this.#live();
    let refused = false;
    try {
      return await withSpan(`step ${step}`, this.#spanOptions(step, 'database'), () => withTransaction(source ?? this.#pool, async (trx) => {
        const value = await fn(trx);
        const json = recordedJson(value, `the result of database step "${step}"`);
        // last, so the task's row is locked only for the commit; refused: everything rolls back
        refused = !(await taskStepRecord(trx, this.#table, this.#task, step, json));
        if (refused) throw this.#lost(`database step "${step}"`);
        return value;
      }));
    } catch (error) {
      throw refused ? await this.#refused(`database step "${step}"`) : error;
    }
  }

  async sleep(name: string, until: Duration | Date): Promise<void> {
    const step = this.#claim(name, 'name');
    const wake =
      until instanceof Date
        ? { at: checkDate(until), delayMs: null }
        : { at: null, delayMs: parseDuration(until, 'duration', { allowZero: true, max: MAX_DELAY_MS }) };
    if ((await this.#lookup(step))?.done) return;
    this.#live();
    const outcome = await this.#fenced<void>(async (trx) => {
      const { wakeAt, due } = await taskStepOpen(trx, this.#table, this.#task, step, wake);
      if (due) {
        await taskStepRecord(trx, this.#table, this.#task, step, null);
        return { kind: 'continue', value: undefined };
      }
      return this.#park(trx, 'sleep', wakeAt);
    });
    return this.#settle(outcome, `sleep "${step}"`);
  }

  async spawn<Q, R>(name: string, task: TaskDefinition<Q, unknown, boolean, R>, items: readonly EnqueueItem<Q>[]): Promise<TaskRef<R>[]> {
    const step = this.#claim(name, 'name');
    if (!Array.isArray(items)) throw new ConfigError('items', `Expected the children of step "${step}" as an array`);
    items.forEach((item, i) => {
      if (item?.dedupKey !== undefined) {
        throw new ConfigError(`items[${i}].dedupKey`, 'A child task cannot take a `dedupKey`: the spawn step itself runs once');
      }
    });
    const recorded = await this.#lookup(step);
    if (recorded?.done) return (recorded.result as string[]).map((id) => ({ id }));
    // checked before any write, like enqueue
    const rows = prepareInserts(task, items).map((row) => ({ ...row, parentId: this.#task.id }));
    this.#live();
    const outcome = await this.#fenced<string[]>(async (trx) => {
      const ids = (await taskInsertMany(trx, this.#table, rows)).map((r) => r.id);
      await taskStepRecord(trx, this.#table, this.#task, step, JSON.stringify(ids));
      return { kind: 'continue', value: ids };
    });
    const ids = await this.#settle(outcome, `spawn "${step}"`);
    return ids.map((id) => ({ id }));
  }

  async waitForChildren<R>(children: readonly TaskRef<R>[]): Promise<R[]> {
    if (!Array.isArray(children)) throw new ConfigError('children', 'Expected the handles ctx.spawn returned');
    const ids = children.map((c, i) => {
      if (typeof c?.id !== 'string') throw new ConfigError(`children[${i}]`, 'Expected a handle ctx.spawn returned');
      return c.id;
    });
    let rows = await taskChildrenRead(this.#pool, this.#table, ids);
    for (const id of ids) {
      const row = rows.get(id);
      if (row !== undefined && row.parentId !== this.#task.id) {
        throw new ConfigError('children', `Task ${id} is not a child of task ${this.#task.id}: only children spawned by this task can be waited for`);
      }
    }
    if ([...rows.values()].some((r) => OPEN.has(r.status))) {
      this.#live();
      const outcome = await this.#fenced<void>(async (trx) => {
        // under the lock: a child ending now waits for this transaction, then sees the park
        if (!(await taskHasOpenChildren(trx, this.#table, this.#task.id))) return { kind: 'continue', value: undefined };
        return this.#park(trx, 'children', null);
      });
      await this.#settle(outcome, 'waiting for children');
      rows = await taskChildrenRead(this.#pool, this.#table, ids);
    }
    const failures: ChildFailure[] = [];
    const results = ids.map((id) => {
      const row = rows.get(id);
      if (row === undefined) {
        failures.push({ id, name: '', status: 'dead', error: 'no such task (purged?)' });
        return undefined;
      }
      if (row.status === 'dead' || row.status === 'cancelled') {
        failures.push({ id, name: row.name, status: row.status, error: row.status === 'dead' ? row.lastError : row.resolution });
      }
      return row.result as R;
    });
    if (failures.length > 0) throw new ChildTaskError(failures);
    return results as R[];
  }

  async waitForSignal<S>(signal: SignalDefinition<S>, options: WaitForSignalOptions = {}): Promise<SignalResult<S>> {
    const { name: signalName } = checkSignal(signal, 'signal');
    const step = this.#claim(options.step ?? `signal:${signalName}`, 'step');
    const timeoutMs = options.timeout === undefined ? null : parseDuration(options.timeout, 'timeout', { allowZero: true, max: MAX_DELAY_MS });
    const recorded = await this.#lookup(step);
    if (recorded?.done) return recorded.result as SignalResult<S>;
    this.#live();
    const outcome = await this.#fenced<SignalResult<S>>(async (trx) => {
      const { wakeAt, due } = await taskStepOpen(trx, this.#table, this.#task, step, { at: null, delayMs: timeoutMs });
      const taken = await taskSignalTake(trx, this.#table, this.#task.id, signalName);
      const result: SignalResult<S> | undefined =
        taken !== undefined ? { timedOut: false, payload: taken.payload as S } : due ? { timedOut: true } : undefined;
      if (result === undefined) return this.#park(trx, `signal:${signalName}`, wakeAt);
      await taskStepRecord(trx, this.#table, this.#task, step, JSON.stringify(result));
      return { kind: 'continue', value: result };
    });
    return this.#settle(outcome, `waiting for signal "${signalName}"`);
  }

  /** A step name for this run: checked, and not used before in it. */
  #claim(name: unknown, option: string): string {
    const step = checkName(name, option, 'the step name');
    if (this.#used.has(step)) {
      throw new PermanentError(`step name "${step}" is used twice in one run of task ${this.#task.id} (${this.#task.name}): give each step its own name`);
    }
    this.#used.add(step);
    return step;
  }

  async #lookup(step: string): Promise<RecordedStep | undefined> {
    this.#recorded ??= taskStepsRead(this.#pool, this.#table, this.#task.id);
    return (await this.#recorded).get(step);
  }

  /** Starts nothing new once the run must stop (lease lost, cancelled, timed out, stopping). */
  #live(): void {
    const signal = this.#ctx.signal;
    if (signal.aborted) throw signal.reason;
  }

  /** Runs `work` in a transaction holding the task's row at its token; `lost` without it. */
  #fenced<T>(work: (trx: TransactionHandle) => Promise<Outcome<T>>): Promise<Outcome<T>> {
    return withTransaction(this.#pool, async (trx): Promise<Outcome<T>> => {
      if (!(await taskFenceLock(trx, this.#table, this.#task))) return { kind: 'lost' };
      return work(trx);
    });
  }

  async #park(trx: TransactionHandle, waitFor: string, wakeAt: Date | null): Promise<Outcome<never>> {
    return (await taskPark(trx, this.#table, this.#task, waitFor, wakeAt)) ? { kind: 'parked', waitFor } : { kind: 'lost' };
  }

  async #settle<T>(outcome: Outcome<T>, what: string): Promise<T> {
    if (outcome.kind === 'continue') return outcome.value;
    if (outcome.kind === 'lost') throw await this.#refused(what);
    const suspended = new SuspendedError(outcome.waitFor);
    runnerControl(this.#ctx)?.suspended(suspended);
    throw suspended;
  }

  // a step that runs (not a replay) is a span, child of the handler's when tracing is on
  #spanOptions(step: string, kind: 'step' | 'database'): SpanOptions {
    return {
      kind: 'internal',
      attributes: { 'leasehold.task.id': this.#task.id, 'leasehold.task.name': this.#task.name, 'leasehold.step.name': step, 'leasehold.step.kind': kind },
    };
  }

  /** Why the fence refused a write: the task was cancelled (`CancelledError`), or the lease moved on. */
  async #refused(what: string): Promise<Error> {
    const state = await leaseReadState(this.#pool, this.#table, [this.#task.id]).catch(() => undefined);
    const now = state?.get(this.#task.id);
    if (now?.status === 'cancelled' && now.leaseVersion === this.#task.leaseVersion) return new CancelledError(this.#task.id);
    return this.#lost(what);
  }

  #lost(what: string): LeaseLostError {
    return new LeaseLostError(this.#task.id, this.#task.leaseVersion, `${what} refused: task ${this.#task.id} lease_version ${this.#task.leaseVersion} moved on (or the task was cancelled)`);
  }
}

const OPEN = new Set(['pending', 'processing', 'waiting']);

function checkDate(value: Date): Date {
  if (!Number.isFinite(value.getTime())) throw new ConfigError('until', 'Expected `until` to be a valid Date');
  return value;
}
