import { MAX_DELAY_MS, parseDuration, type Duration } from '../duration.js';
import {
  CancelledError,
  ChildTaskError,
  ConfigError,
  LeaseLostError,
  NonDeterminismError,
  PermanentError,
  SuspendedError,
  type ChildFailure,
  type RecordedCall,
  type RecordKind,
} from '../errors.js';
import { checkName } from '../input/text.js';
import type { LeasedTable, TaskRow } from '../leased-table.js';
import { leaseReadState } from '../sql/lease-read-state.js';
import type { Claimed } from '../sql/lease-row.js';
import { taskInsertMany } from '../sql/task-insert-many.js';
import type { ParkResult } from '../sql/task-park-many.js';
import { taskEventSet } from '../sql/task-events.js';
import { taskChildrenRead, taskFenceLock, taskPatchRecord, taskStepRecord, type ChildRow, type RecordedStep } from '../sql/task-steps.js';
import { withTransaction, type PgPoolLike, type TransactionHandle, type TransactionSource } from '../sql/transaction.js';
import type { TaskDefinition } from '../task/define-task.js';
import type { EnqueueItem } from '../task/enqueue.js';
import { prepareInserts } from '../task/enqueue.js';
import { withSpan, type SpanOptions } from '../telemetry/with-span.js';
import { runnerControl, type HandlerContext } from '../worker/handler-context.js';
import { checkSignal, type SignalDefinition } from './define-signal.js';
import { eventKey, type EventDefinition } from './define-event.js';
import { recordedJson } from './json-value.js';
import { parkRecorder } from './park-recorder.js';
import { replayReader } from './replay-reader.js';
import { claimedRecords } from '../sql/claimed-records.js';
import { stepRecorder } from './step-recorder.js';
import { callWithRetry, stepRetryPolicy, type StepOptions } from './step-retry.js';
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

type Outcome<T> =
  | { readonly kind: 'continue'; readonly value: T }
  | { readonly kind: 'parked'; readonly waitFor: string; readonly dueInMs: number | null }
  | { readonly kind: 'lost' };

/**
 * One run of a task's handler as a workflow: the steps it recorded before (read once, on the
 * first step), the names used in this run, and the fenced writes of its steps, sleeps, children
 * and waits. A wait that cannot end now parks the task in the same transaction that checked it
 * and ends the run (`SuspendedError`); the task runs again from the top when the wait ends, and
 * every recorded step then returns its stored result without running.
 *
 * Replay is checked (see {@link Replay}): each recording call takes the next position, and a call
 * whose name or kind differs from what the run recorded there fails the run with
 * `NonDeterminismError` rather than return a result recorded for other code.
 * @internal
 */
export class WorkflowRun {
  readonly #pool: PgPoolLike;
  readonly #table: LeasedTable<TaskRow>;
  readonly #task: Claimed<TaskRow>;
  readonly #ctx: HandlerContext;
  /** The version of the definition running it: a patch taken fresh raises the run's to this. */
  readonly #version: number;
  #records: Promise<Replay> | undefined;
  readonly #used = new Set<string>();
  readonly #patches = new Map<string, Promise<boolean>>();
  /** The next recording call's position. */
  #next = 0;
  /** Recording calls under way; a call made while another is under way makes the run concurrent. */
  #inFlight = 0;
  #concurrent = false;
  /** How many times this run has set each event key: the next call's record is `event:<key>#<n + 1>`. */
  readonly #eventCalls = new Map<string, number>();
  /** The children this run spawned (not replayed): its own, and unlikely to have ended yet. */
  readonly #spawned = new Set<string>();
  /**
   * The children of this run's recorded spawns: a fork's (`forkTask`) are the original's, whose
   * `parent_id` they keep; its wait reads them by id and does not park on them (forkTask refuses
   * while one has not ended).
   */
  readonly #recordedChildren = new Set<string>();

  constructor(pool: PgPoolLike, table: LeasedTable<TaskRow>, task: Claimed<TaskRow>, ctx: HandlerContext, version = 1) {
    this.#pool = pool;
    this.#table = table;
    this.#task = task;
    this.#ctx = ctx;
    this.#version = version;
  }

  async step<T>(name: string, fn: () => Promise<T> | T, options?: StepOptions): Promise<T> {
    const step = this.#claim(name, 'name');
    if (typeof fn !== 'function') throw new ConfigError('fn', `Expected step "${step}" to be given a function`);
    const retry = stepRetryPolicy(options, step);
    const call = this.#enter(step, 'step');
    try {
      const recorded = await this.#replay(call);
      if (recorded?.done) return recorded.result as T;
      this.#live();
      return await withSpan(`step ${step}`, this.#spanOptions(step, 'step'), async () => {
        const value = await callWithRetry(fn, retry, this.#ctx.signal);
        const json = recordedJson(value, `the result of step "${step}"`);
        const task = this.#task;
        const written = await this.#lent(() => stepRecorder(this.#pool, this.#table).submit({ taskId: task.id, leaseVersion: task.leaseVersion, name: step, resultJson: json, position: call.position }));
        if (!written) throw await this.#refused(`step "${step}"`);
        return value;
      });
    } finally {
      this.#inFlight--;
    }
  }

  async dbStep<T>(name: string, source: TransactionSource | undefined, fn: (trx: TransactionHandle) => Promise<T>): Promise<T> {
    const step = this.#claim(name, 'name');
    if (typeof fn !== 'function') throw new ConfigError('fn', `Expected database step "${step}" to be given a function`);
    const call = this.#enter(step, 'db');
    try {
      const recorded = await this.#replay(call);
      if (recorded?.done) return recorded.result as T;
      this.#live();
      let refused = false;
      try {
        return await withSpan(`step ${step}`, this.#spanOptions(step, 'database'), () => withTransaction(source ?? this.#pool, async (trx) => {
          const value = await fn(trx);
          const json = recordedJson(value, `the result of database step "${step}"`);
          // last, so the task's row is locked only for the commit; refused: everything rolls back
          refused = !(await taskStepRecord(trx, this.#table, this.#task, step, json, call));
          if (refused) throw this.#lost(`database step "${step}"`);
          return value;
        }));
      } catch (error) {
        throw refused ? await this.#refused(`database step "${step}"`) : error;
      }
    } finally {
      this.#inFlight--;
    }
  }

  async sleep(name: string, until: Duration | Date): Promise<void> {
    const calledAt = performance.now();
    const step = this.#claim(name, 'name');
    const wake =
      until instanceof Date
        ? { at: checkDate(until), delayMs: null }
        : { at: null, delayMs: parseDuration(until, 'duration', { allowZero: true, max: MAX_DELAY_MS }) };
    const call = this.#enter(step, 'sleep');
    try {
      if ((await this.#replay(call))?.done) return;
      this.#live();
      const task = this.#task;
      const parked = await this.#lent(
        () => parkRecorder(this.#pool, this.#table).submit({ kind: 'sleep', taskId: task.id, leaseVersion: task.leaseVersion, name: step, position: call.position, ...wake, calledAt }),
        (r) => r.kind !== 'parked',
      );
      const outcome: Outcome<void> = parked.kind === 'continue' ? { kind: 'continue', value: undefined } : this.#parkOutcome(parked, 'sleep');
      return await this.#settle(outcome, `sleep "${step}"`);
    } finally {
      this.#inFlight--;
    }
  }

  async spawn<Q, R>(name: string, task: TaskDefinition<Q, unknown, boolean, R>, items: readonly EnqueueItem<Q>[]): Promise<TaskRef<R>[]> {
    const step = this.#claim(name, 'name');
    if (!Array.isArray(items)) throw new ConfigError('items', `Expected the children of step "${step}" as an array`);
    items.forEach((item, i) => {
      if (item?.dedupKey !== undefined) {
        throw new ConfigError(`items[${i}].dedupKey`, 'A child task cannot take a `dedupKey`: the spawn step itself runs once');
      }
    });
    const call = this.#enter(step, 'spawn');
    try {
      const recorded = await this.#replay(call);
      if (recorded?.done) {
        const ids = recorded.result as string[];
        // the children were spawned for the items the run had then: other items now are other code
        if (this.#records !== undefined && (await this.#records).checked && ids.length !== items.length) {
          throw this.#mismatch(call.position, recorded.kind === null ? null : { name: step, kind: recorded.kind }, call, `it spawned ${ids.length} children, the code now spawns ${items.length}`);
        }
        for (const id of ids) this.#recordedChildren.add(id);
        return ids.map((id) => ({ id }));
      }
      // checked before any write, like enqueue
      const rows = prepareInserts(task, items).map((row) => ({ ...row, parentId: this.#task.id }));
      this.#live();
      const outcome = await this.#fenced<string[]>(async (trx) => {
        const ids = (await taskInsertMany(trx, this.#table, rows)).map((r) => r.id);
        await taskStepRecord(trx, this.#table, this.#task, step, JSON.stringify(ids), call);
        return { kind: 'continue', value: ids };
      });
      const ids = await this.#settle(outcome, `spawn "${step}"`);
      for (const id of ids) this.#spawned.add(id);
      return ids.map((id) => ({ id }));
    } finally {
      this.#inFlight--;
    }
  }

  async waitForChildren<R>(children: readonly TaskRef<R>[]): Promise<R[]> {
    if (!Array.isArray(children)) throw new ConfigError('children', 'Expected the handles ctx.spawn returned');
    const ids = children.map((c, i) => {
      if (typeof c?.id !== 'string') throw new ConfigError(`children[${i}]`, 'Expected a handle ctx.spawn returned');
      return c.id;
    });
    // children this run spawned just now have not ended yet, or hardly: park first, read after
    let rows = ids.length > 0 && ids.every((id) => this.#spawned.has(id)) ? undefined : await this.#children(ids);
    if (rows === undefined || [...rows.values()].some((r) => OPEN.has(r.status))) {
      this.#live();
      const task = this.#task;
      // under the lock: a child ending now waits for this write, then sees the park
      const parked = await parkRecorder(this.#pool, this.#table).submit({ kind: 'children', taskId: task.id, leaseVersion: task.leaseVersion });
      const outcome: Outcome<void> = parked.kind === 'continue' ? { kind: 'continue', value: undefined } : this.#parkOutcome(parked, 'children');
      await this.#settle(outcome, 'waiting for children');
      rows = await this.#children(ids);
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

  /** The given tasks as their parent reads them; a `ConfigError` when one is not this task's child. */
  async #children(ids: readonly string[]): Promise<Map<string, ChildRow>> {
    const rows = await taskChildrenRead(this.#pool, this.#table, ids);
    for (const id of ids) {
      const row = rows.get(id);
      if (row !== undefined && row.parentId !== this.#task.id && !this.#recordedChildren.has(id)) {
        throw new ConfigError('children', `Task ${id} is not a child of task ${this.#task.id}: only children spawned by this task can be waited for`);
      }
    }
    return rows;
  }

  async waitForSignal<S>(signal: SignalDefinition<S>, options: WaitForSignalOptions = {}): Promise<SignalResult<S>> {
    const calledAt = performance.now();
    const { name: signalName } = checkSignal(signal, 'signal');
    const step = this.#claim(options.step ?? `signal:${signalName}`, 'step');
    const timeoutMs = options.timeout === undefined ? null : parseDuration(options.timeout, 'timeout', { allowZero: true, max: MAX_DELAY_MS });
    const call = this.#enter(step, 'signal');
    try {
      const recorded = await this.#replay(call);
      if (recorded?.done) return recorded.result as SignalResult<S>;
      this.#live();
      const task = this.#task;
      const parked = await this.#lent(
        () => parkRecorder(this.#pool, this.#table).submit({ kind: 'signal', taskId: task.id, leaseVersion: task.leaseVersion, name: step, position: call.position, signal: signalName, delayMs: timeoutMs, calledAt }),
        (r) => r.kind !== 'parked',
      );
      const outcome: Outcome<SignalResult<S>> =
        parked.kind !== 'continue'
          ? this.#parkOutcome(parked, `signal:${signalName}`)
          : { kind: 'continue', value: parked.taken ? { timedOut: false, payload: parked.payload as S } : { timedOut: true } };
      return await this.#settle(outcome, `waiting for signal "${signalName}"`);
    } finally {
      this.#inFlight--;
    }
  }

  /**
   * `ctx.setEvent(key, value)`: sets the task's progress event `key` to `value` (the latest
   * write wins), recorded as the run's next call, `event:<key>#<n>` for its n-th call with that
   * key, kind `event`. One fenced statement records the call and sets the event; a replayed call
   * (recorded by an earlier run) writes nothing, so a rerun never puts back an earlier value.
   */
  async setEvent<T>(event: EventDefinition<T> | string, value: T): Promise<void> {
    const key = eventKey(event, 'key');
    const n = (this.#eventCalls.get(key) ?? 0) + 1;
    // checked before the call takes a position: a bad value is the code's fault, as a step's is
    const json = recordedJson(value, `the value of event "${key}"`);
    if (json === null) throw new PermanentError(`the value of event "${key}" of task ${this.#task.id} (${this.#task.name}) is undefined: set a JSON value (null included)`);
    this.#eventCalls.set(key, n);
    const name = this.#claimRecord(`event:${key}#${n}`);
    const call = this.#enter(name, 'event');
    try {
      if ((await this.#replay(call))?.done) return;
      this.#live();
      if (!(await taskEventSet(this.#pool, this.#table, this.#task, name, key, json, call))) throw await this.#refused(`event "${key}"`);
    } finally {
      this.#inFlight--;
    }
  }

  /**
   * `ctx.patched(id)`: true when the run reaches this point fresh (nothing recorded at or after
   * its position), false when it had gone past it on the code before the patch; the answer is
   * recorded (`patch:<id>`, no position) and repeated in every later run of the task.
   */
  patched(id: string): Promise<boolean> {
    const patch = checkName(id, 'id', 'the patch id');
    const name = `patch:${patch}`;
    let answer = this.#patches.get(name);
    if (answer === undefined) this.#patches.set(name, (answer = this.#patch(name, this.#next)));
    return answer;
  }

  async #patch(name: string, position: number): Promise<boolean> {
    const replay = await this.#load();
    const recorded = replay.recorded.get(name);
    if (recorded !== undefined) return recorded.result === true;
    // a run recorded before positions were: where it stands cannot be told, and the code it
    // started on is the old one
    const fresh = replay.checked && replay.lastPosition < position;
    this.#live();
    const outcome = await this.#fenced<boolean>(async (trx) => {
      await taskPatchRecord(trx, this.#table, this.#task, name, fresh, this.#version);
      return { kind: 'continue', value: fresh };
    });
    return this.#settle(outcome, `patch "${name}"`);
  }

  /**
   * What the run left unasked when its handler returned: a recorded call the code no longer
   * makes (a step removed or renamed) is a `NonDeterminismError`, so the run does not end done on
   * code that skipped what it did. Undefined when all was replayed (or nothing was recorded).
   */
  unasked(): Error | undefined {
    const replay = this.#loaded;
    if (replay === undefined || !replay.checked) return undefined;
    let first: { name: string; step: RecordedStep } | undefined;
    for (const [name, step] of replay.recorded) {
      if (step.kind === 'patch' || this.#used.has(name)) continue;
      if (first === undefined || (step.position ?? 0) < (first.step.position ?? 0)) first = { name, step };
    }
    if (first === undefined || first.step.kind === null) return undefined;
    return this.#failure(first.step.position ?? 0, { name: first.name, kind: first.step.kind }, null);
  }

  /** A step name for this run: checked, and not used before in it. */
  #claim(name: unknown, option: string): string {
    const step = checkName(name, option, 'the step name');
    if (step.startsWith('patch:')) {
      throw new PermanentError(`step name "${step}" of task ${this.#task.id} (${this.#task.name}) starts with "patch:", which ctx.patched's records use: rename the step`);
    }
    return this.#claimRecord(step);
  }

  /** A record's name, not used before in this run. */
  #claimRecord(step: string): string {
    if (this.#used.has(step)) {
      throw new PermanentError(`step name "${step}" is used twice in one run of task ${this.#task.id} (${this.#task.name}): give each step its own name`);
    }
    this.#used.add(step);
    return step;
  }

  /** A recording call starts: its position, and whether it overlaps another (see {@link Replay}). */
  #enter(name: string, kind: RecordKind): Call {
    if (this.#inFlight > 0) this.#concurrent = true;
    this.#inFlight++;
    return { name, kind, position: this.#next++ };
  }

  #loaded: Replay | undefined;

  #load(): Promise<Replay> {
    if (this.#records !== undefined) return this.#records;
    const task = this.#task;
    // Every record is written under a lease, and a task's first claim is lease_version 1: a run
    // claimed at 1 has recorded nothing, and need not ask.
    // A run resumed after a park, a failure or a release has its records from the claim.
    const fromClaim = task.leaseVersion === 1 ? new Map<string, RecordedStep>() : claimedRecords.get(task);
    const recorded: Promise<ReadonlyMap<string, RecordedStep>> =
      fromClaim !== undefined ? Promise.resolve(fromClaim) : replayReader(this.#pool, this.#table).submit({ id: task.id, leaseVersion: task.leaseVersion });
    return (this.#records = recorded.then((steps) => (this.#loaded = new Replay(steps))));
  }

  /** The record of `call`, checked against what the run recorded at its position. */
  async #replay(call: Call): Promise<RecordedStep | undefined> {
    const replay = await this.#load();
    const recorded = replay.recorded.get(call.name);
    if (!replay.checked) return recorded;
    if (!this.#concurrent) {
      // calls made one after another come in the same order every run
      const there = replay.byPosition.get(call.position);
      if (there !== undefined && there !== call.name) {
        const step = replay.recorded.get(there)!;
        throw this.#mismatch(call.position, { name: there, kind: step.kind ?? call.kind }, call);
      }
      if (there === undefined && recorded !== undefined && recorded.position !== null) {
        throw this.#mismatch(call.position, null, call, `the run recorded "${call.name}" at position ${recorded.position}`);
      }
    }
    if (recorded !== undefined && recorded.kind !== null && recorded.kind !== call.kind) {
      throw this.#mismatch(recorded.position ?? call.position, { name: call.name, kind: recorded.kind }, call);
    }
    return recorded;
  }

  /** Fails the run: its handler is stopped and the task goes dead with `error` (docs/workflows.md). */
  #mismatch(position: number, recorded: RecordedCall | null, requested: RecordedCall, detail?: string): NonDeterminismError {
    const error = this.#failure(position, recorded, requested, detail);
    runnerControl(this.#ctx)?.failed(error);
    return error;
  }

  #failure(position: number, recorded: RecordedCall | null, requested: RecordedCall | null, detail?: string): NonDeterminismError {
    return new NonDeterminismError(this.#task.id, this.#task.name, position, recorded, requested, detail);
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

  /** A wait that did not end now: parked (due in how many ms, when it has a wake time), or refused. */
  #parkOutcome(result: Exclude<ParkResult, { kind: 'continue' }>, waitFor: string): Outcome<never> {
    return result.kind === 'parked' ? { kind: 'parked', waitFor, dueInMs: result.dueInMs } : { kind: 'lost' };
  }

  /**
   * Runs `write`, a write of the worker's own that the run waits for while it runs none of its
   * code, with the run's slot lent to the next task (see `RunnerControl.release`) when no other
   * call of the run is under way, nor ever was. A woken run held its slot through its step's
   * batched record, 10-20 ms under load, while the runs woken with it waited in the buffer; and
   * runs that had recorded a step waited for their slot back behind runs that held theirs through
   * their park (issue 32). The run takes a slot back before its code goes on: unless `goesOn`
   * says the write parked it (its handler ends there, as a parked run holds no slot).
   */
  async #lent<T>(write: () => Promise<T>, goesOn: (result: T) => boolean = () => true): Promise<T> {
    const takeBack = this.#task.leaseVersion > 1 && this.#inFlight === 1 && !this.#concurrent ? runnerControl(this.#ctx)?.release?.() : undefined;
    if (takeBack === undefined) return write();
    let result: T;
    try {
      result = await write();
    } catch (error) {
      await takeBack();
      throw error;
    }
    if (goesOn(result)) await takeBack();
    return result;
  }

  async #settle<T>(outcome: Outcome<T>, what: string): Promise<T> {
    if (outcome.kind === 'continue') return outcome.value;
    if (outcome.kind === 'lost') throw await this.#refused(what);
    const suspended = new SuspendedError(outcome.waitFor);
    runnerControl(this.#ctx)?.suspended(suspended, outcome.dueInMs ?? undefined);
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

/** One recording call of this run: its name, kind and position (see {@link Replay}). */
interface Call extends RecordedCall {
  readonly position: number;
}

/**
 * What a run recorded before, as replay checks it. Each recording call (step, database step,
 * sleep, spawn, signal wait) takes the next position, 0, 1, …, when it is made. Calls made one
 * after another come in the same order in every run of the same code, so at each position the
 * name and kind must be what the run recorded there. Calls that overlap (`Promise.all` over steps,
 * branches that each await steps) may interleave differently from run to run: once a call is made
 * while another is under way, the run is checked by name and kind alone, and, when the handler
 * returns, for recorded calls it never made. A run recorded before positions were (core
 * migration 11) is not checked.
 */
class Replay {
  readonly byPosition = new Map<number, string>();
  /** The highest position recorded; -1 when none. */
  readonly lastPosition: number;
  /** False for a run recorded before positions were: not checked. */
  readonly checked: boolean;

  constructor(readonly recorded: ReadonlyMap<string, RecordedStep>) {
    let last = -1;
    let checked = true;
    for (const [name, step] of recorded) {
      if (step.kind === 'patch') continue;
      if (step.position === null) checked = false;
      else {
        this.byPosition.set(step.position, name);
        if (step.position > last) last = step.position;
      }
    }
    this.lastPosition = last;
    this.checked = checked;
  }
}

function checkDate(value: Date): Date {
  if (!Number.isFinite(value.getTime())) throw new ConfigError('until', 'Expected `until` to be a valid Date');
  return value;
}
