import { ConfigError, LeaseLostError } from '../errors.js';
import { taskTable, type TaskRow } from '../leased-table.js';
import { taskInsertMany } from '../sql/task-insert-many.js';
import type { Claimed } from '../sql/lease-row.js';
import { taskCheckpoint } from '../sql/task-checkpoint.js';
import type { PgPoolLike } from '../sql/transaction.js';
import { CORE_MIGRATION_LINE } from '../worker/core-migration-line.js';
import { runnerControl, type HandlerContext } from '../worker/handler-context.js';
import { WorkflowRun } from '../workflow/workflow-run.js';
import { recordedJson } from '../input/json-value.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import type { TransactionSource } from '../sql/transaction.js';
import type { SignalDefinition } from '../workflow/define-signal.js';
import type { EventDefinition } from '../workflow/define-event.js';
import type { StepOptions } from '../workflow/step-retry.js';
import type { TaskRef } from '../workflow/task-ref.js';
import type { SignalResult, WaitForSignalOptions } from '../workflow/workflow-run.js';
import type { EnqueueItemFor } from './enqueue-args.js';
import type { LeaseWorker } from '../worker/lease-worker.js';
import { limitDeclarations } from '../limits/limit-declarations.js';
import { createScheduler } from '../schedule/scheduler.js';
import type { ScheduleDefinition } from '../schedule/define-schedule.js';
import { TaskWorker } from './task-worker.js';
import type { RetentionOptions } from '../retention/retention-options.js';
import type { LeaseWorkerOptions } from '../worker/lease-worker-options.js';
import type { TaskContext, TaskDefinition } from './define-task.js';
import { ENQUEUE_OPTIONS, prepareInserts, validatePayload } from './enqueue.js';

/**
 * The worker runtime's options a typed-task worker passes through as they are.
 * @inline
 */
type RuntimeOptions =
  | 'pool' | 'owner' | 'concurrency' | 'batch' | 'prefetch' | 'maxPrefetch' | 'pollInterval' | 'heartbeatInterval' | 'startTimeout' | 'listen' | 'logger'
  | 'noPreparedStatements' | 'listenConnectionString';

/** Options of {@link createWorker}: the runtime's (see {@link LeaseWorkerOptions}), plus the tasks. */
export type WorkerOptions = Pick<LeaseWorkerOptions<TaskRow>, RuntimeOptions> & {
  /** The task types this worker runs; it claims only these names. */
  tasks: readonly TaskDefinition<unknown, unknown>[];
  /** Schema of the task table. @defaultValue 'leasehold' */
  schema?: string;
  /**
   * Schedules (`defineSchedule`) this worker fires while it runs: started with the worker,
   * stopped with it. Their tasks may run on this worker or on others. @defaultValue none
   */
  schedules?: readonly ScheduleDefinition<unknown>[];
  /**
   * Deleting old finished rows of the task table, with their steps and signals (see
   * {@link RetentionOptions} and docs/operations.md, "Retention"): the workers take turns, one at
   * a time. `false`: this worker takes no turns. @defaultValue done and cancelled rows leave 7
   * days after they ended, dead rows stay
   */
  retention?: RetentionOptions | false;
};

type WorkerRuntime = LeaseWorkerOptions<TaskRow>;

const TASK_HINT = 'belongs on defineTask: each task type sets its own';
const WORKER_OPTIONS = optionKeys<WorkerOptions>()(
  'createWorker',
  ['pool', 'tasks', 'schema', 'schedules', 'retention', 'owner', 'concurrency', 'batch', 'prefetch', 'maxPrefetch', 'pollInterval', 'heartbeatInterval', 'startTimeout', 'listen', 'logger', 'noPreparedStatements', 'listenConnectionString'],
  Object.fromEntries(['lease', 'handlerTimeout', 'backoff', 'maxDeferAge', 'maxAttempts', 'priority', 'ordered', 'limit', 'validate', 'handler', 'version', 'accepts'].map((key) => [key, `${key} ${TASK_HINT}`])),
);

/** A worker for typed tasks; see {@link LeaseWorker} for its lifecycle and events. */
export type Worker = LeaseWorker<TaskRow>;

/**
 * Creates a worker for the given task types. Options and definitions are checked here, before
 * anything touches the database.
 *
 * @example
 * const worker = createWorker({ pool, tasks: [sendEmail, resizeImage], concurrency: 16 });
 * await worker.start();
 * process.once('SIGTERM', () => void worker.stop({ timeout: '30s' }));
 */
export function createWorker(options: WorkerOptions): Worker {
  checkOptionKeys(options, WORKER_OPTIONS);
  if (!Array.isArray(options.tasks) || options.tasks.length === 0) {
    throw new ConfigError('tasks', 'Expected `tasks` to list at least one task made by defineTask()');
  }
  const byName = new Map<string, TaskDefinition<unknown, unknown>>();
  for (const task of options.tasks) {
    if (typeof task?.name !== 'string' || typeof task.handler !== 'function') {
      throw new ConfigError('tasks', 'Expected every entry of `tasks` to be made by defineTask()');
    }
    if (byName.has(task.name)) throw new ConfigError('tasks', `Task "${task.name}" is listed twice`);
    byName.set(task.name, task);
  }
  const { tasks: _tasks, schema, schedules, retention, ...runtime } = options;
  const table = taskTable(schema);
  // checked now, like the tasks: a schedule's mistakes fail here, not at start()
  const scheduler =
    schedules === undefined || schedules.length === 0
      ? undefined
      : (owner: string) => createScheduler({ pool: options.pool, schedules, schema, owner, logger: options.logger, noPreparedStatements: options.noPreparedStatements });
  const definition = (task: Claimed<TaskRow>) => byName.get(task.name)!;
  const pool = options.pool;
  const lease = Math.max(...[...byName.values()].map((d) => d.settings.leaseMs));

  return new TaskWorker({
    ...runtime,
    table,
    // on unless turned off: history must not grow without bound by default
    retention: retention ?? {},
    names: [...byName.keys()],
    // a run is claimed only by code that can replay it (docs/workflows.md, "Changing workflow code")
    versions: new Map([...byName].map(([name, d]) => [name, d.runsVersions ?? [1]])),
    // recorded at start(); the claim keeps the tasks within them
    limits: limitDeclarations([...byName.values()]),
    lease,
    // only the tasks whose lease differs from the worker's: with none, the claim sets one lease
    // for every row instead of looking each row's name up
    leaseMsByName: new Map([...byName].filter(([, d]) => d.settings.leaseMs !== lease).map(([name, d]) => [name, d.settings.leaseMs])),
    settingsFor: (task) => definition(task).settings,
    // start() refuses a schema that core's migrate() has not brought up to date
    migrationLines: [CORE_MIGRATION_LINE],
    // spans continue the trace enqueue stored with the task (its traceparent and tracestate)
    telemetry: {
      operation: 'process',
      destination: (task) => task.name,
      carrier: (task) => (task.traceparent === null ? undefined : task),
      availableAtMs: (task) => task.availableAt.getTime(),
    },
    // not async: a handler that returns at once costs no promise (see TaskRunner); what it
    // returns (or resolves to) is kept by `result` below
    handle: ((task, ctx) => {
      const def = definition(task);
      // an invalid payload throws PayloadValidationError: the task goes dead with the message
      const payload = validatePayload(def, task.payload);
      return def.handler(payload, new Context(pool, table, task, ctx, schema, def.version ?? 1));
    }) as WorkerRuntime['handle'],
    // not JSON: a PermanentError before anything is written (retrying returns the same)
    result: (value, task) => recordedJson(value, `the result of task "${task.name}"`),
  }, scheduler);
}

/**
 * A typed task's context: one object per task whose members are made on first read (the signal
 * is the worker's lazy one; the functions are bound, so `const { checkpoint } = ctx` works). A
 * plain object with five closures and the task's summary cost every task, read or not.
 */
class Context implements TaskContext<unknown> {
  readonly #pool: PgPoolLike;
  readonly #table: ReturnType<typeof taskTable>;
  readonly #claimed: Claimed<TaskRow>;
  readonly #ctx: HandlerContext;
  readonly #schema: string | undefined;
  readonly #version: number;
  #task: TaskContext<unknown>['task'] | undefined;
  #checkpoint: TaskContext<unknown>['checkpoint'] | undefined;
  #enqueue: TaskContext<unknown>['enqueue'] | undefined;
  #workflow: WorkflowRun | undefined;

  constructor(pool: PgPoolLike, table: ReturnType<typeof taskTable>, claimed: Claimed<TaskRow>, ctx: HandlerContext, schema: string | undefined, version: number) {
    this.#pool = pool;
    this.#table = table;
    this.#claimed = claimed;
    this.#ctx = ctx;
    this.#schema = schema;
    this.#version = version;
  }

  get signal(): AbortSignal {
    return this.#ctx.signal;
  }

  get extendLease(): HandlerContext['extendLease'] {
    return this.#ctx.extendLease;
  }

  get onCommit(): HandlerContext['onCommit'] {
    return this.#ctx.onCommit;
  }

  get task(): TaskContext<unknown>['task'] {
    const t = this.#claimed;
    return (this.#task ??= { id: t.id, name: t.name, attempts: t.attempts, maxAttempts: t.maxAttempts, leaseVersion: t.leaseVersion, createdAt: t.createdAt });
  }

  get lastCheckpoint(): unknown {
    return this.#claimed.checkpoint;
  }

  get checkpoint(): TaskContext<unknown>['checkpoint'] {
    return (this.#checkpoint ??= async (state) => {
      const task = this.#claimed;
      // not JSON (a Date, a Map…): a PermanentError before anything is written, like a step's result
      const saved = await taskCheckpoint(this.#pool, this.#table, task, recordedJson(state ?? null, `the checkpoint of task "${task.name}"`)!);
      // thrown out of the handler, this aborts the task and writes nothing
      if (!saved) throw new LeaseLostError(task.id, task.leaseVersion, `checkpoint refused: task ${task.id} lease moved on`);
    });
  }

  // the workflow methods share one WorkflowRun per run: its recorded steps and used names
  get #run(): WorkflowRun {
    if (this.#workflow === undefined) {
      const run = (this.#workflow = new WorkflowRun(this.#pool, this.#table, this.#claimed, this.#ctx, this.#version));
      // a run that returns without making every call it recorded does not end done
      runnerControl(this.#ctx)?.onReturn(() => run.unasked());
    }
    return this.#workflow;
  }

  patched(id: string): Promise<boolean> {
    return this.#run.patched(id);
  }

  step<T>(name: string, fn: () => Promise<T> | T, options?: StepOptions): Promise<T> {
    return this.#run.step(name, fn, options);
  }

  dbStep<T>(name: string, ...rest: unknown[]): Promise<T> {
    const [db, fn] = rest.length >= 2 ? rest : [undefined, rest[0]];
    return this.#run.dbStep(name, db as TransactionSource | undefined, fn as Parameters<WorkflowRun['dbStep']>[2]) as Promise<T>;
  }

  sleep(name: string, duration: Parameters<TaskContext<unknown>['sleep']>[1]): Promise<void> {
    return this.#run.sleep(name, duration);
  }

  spawn<Q, O extends boolean, R>(name: string, task: TaskDefinition<Q, unknown, O, R>, items: readonly EnqueueItemFor<NoInfer<Q>, O>[]): Promise<TaskRef<R>[]> {
    return this.#run.spawn(name, task, items);
  }

  waitForChildren<R>(children: readonly TaskRef<R>[]): Promise<R[]> {
    return this.#run.waitForChildren(children);
  }

  waitForSignal<S>(signal: SignalDefinition<S>, options?: WaitForSignalOptions): Promise<SignalResult<S>> {
    return this.#run.waitForSignal(signal, options);
  }

  setEvent<T>(event: EventDefinition<T> | string, value: NoInfer<T>): Promise<void> {
    return this.#run.setEvent(event, value);
  }

  get enqueue(): TaskContext<unknown>['enqueue'] {
    return (this.#enqueue ??= (next, payload, enqueueOptions = {}) => {
      // checked now, so a bad follow-up fails this handler rather than its commit
      const rows = prepareInserts(next, [{ ...enqueueOptions, payload }], ENQUEUE_OPTIONS);
      const followUpTable = taskTable(enqueueOptions.schema ?? this.#schema);
      this.#ctx.onCommit(async (trx) => void (await taskInsertMany(trx, followUpTable, rows)));
    });
  }
}
