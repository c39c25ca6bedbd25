/**
 * Leased tasks with fencing tokens on PostgreSQL: typed tasks, a worker runtime for any leased
 * table, schedules, and the operations a person runs on the tables.
 *
 * @module @leasehold/core
 */

// Public API, name by name. What leasehold's own packages share with core but applications
// should not use is in ./internal.ts (@leasehold/core/internal, unstable).

// typed tasks: define, enqueue, run
export {
  defineTask,
  type TaskDefinition,
  type TaskOptions,
  type TaskContext,
  type PayloadValidator,
} from './task/define-task.js';
export type { EnqueueOptions } from './task/enqueue-options.js';
export { enqueue, enqueueMany, type EnqueueItem } from './task/enqueue.js';
export type { OrderedEnqueueOptions, EnqueueOptionsArg, EnqueueItemFor } from './task/enqueue-args.js';
export type { InsertedTask } from './sql/task-insert-many.js';
export type { JsonValue, JsonCompatible, JsonPayloadCheck, JsonTypeCheck } from './input/json-type.js';
export { createWorker, type Worker, type WorkerOptions } from './task/create-worker.js';
export { isTaskDefinition, isScheduleDefinition } from './task/definition-guards.js';
export { migrate, type MigrateOptions, type MigrateResult } from './migrate/migrator.js';

// workflows: durable steps, sleeps, children, signals, results, cancellation (docs/workflows.md)
export type { KyselyTransactionSourceOf } from './task/define-task.js';
export type { TaskRef } from './workflow/task-ref.js';
export type { SignalResult, WaitForSignalOptions } from './workflow/workflow-run.js';
export type { StepOptions, StepRetry } from './workflow/step-retry.js';
export { defineSignal, type SignalDefinition } from './workflow/define-signal.js';
export { sendSignal, type SignalSent } from './workflow/send-signal.js';
export { cancelTask, type CancelOptions } from './workflow/cancel-task.js';
export { getTask, type TaskInfo, type TimelineEntry } from './workflow/get-task.js';
export { forkTask, type ForkOptions } from './workflow/fork-task.js';
export type { TaskReadRow, StepReadRow, ChildReadRow, SignalReadRow } from './sql/task-read.js';
export { listTasks, type TaskListFilter, type TaskListOptions, type TaskList } from './workflow/list-tasks.js';
export type { TaskSummary } from './sql/task-list.js';
export { waitForResult, type WaitForResultOptions } from './workflow/wait-for-result.js';
export { defineEvent, type EventDefinition } from './workflow/define-event.js';
export { getEvent, type GetEventOptions } from './workflow/get-event.js';
export type { Duration } from './duration.js';
export { TASK_STATUSES, type TaskStatus } from './task-status.js';

// workflow change safety: versions in flight, patches still needed, runs that failed replay
export { taskVersions, type TaskVersions, type TaskVersionsOptions } from './workflow/task-versions.js';
export type { TaskVersionRow } from './sql/task-version-counts.js';
export type { LiveWorker } from './sql/task-worker-list.js';
export { patchUsage, type PatchUsageOptions } from './workflow/patch-usage.js';
export type { PatchUsageRow } from './sql/patch-usage-counts.js';
export { nonDeterminismDeadCounts } from './workflow/non-determinism-dead.js';
export { NON_DETERMINISM_ERROR_PREFIX, type NonDeterminismDeadRow } from './sql/task-dead-non-determinism.js';

// errors
export {
  ERROR_CODES,
  type ErrorCode,
  LeaseholdError,
  ConfigError,
  RetryableError,
  PermanentError,
  DeferError,
  LeaseLostError,
  PayloadValidationError,
  HandlerTimeoutError,
  ShutdownError,
  CancelledError,
  SuspendedError,
  ChildTaskError,
  type ChildFailure,
  TaskFailedError,
  TaskNotFoundError,
  WaitTimeoutError,
  NonDeterminismError,
  WorkerStateError,
  type RecordKind,
  type RecordedCall,
  isLeaseholdError,
} from './errors.js';
export {
  DatabaseNotReadyError,
  DATABASE_NOT_READY_REASONS,
  type DatabaseNotReadyReason,
} from './worker/database-not-ready-error.js';
export { INPUT_LIMITS, INTEGER_RANGES, type IntegerRange } from './input/limits.js';

// schedules
export { defineSchedule, MAX_CATCH_UP, type ScheduleDefinition, type ScheduleOptions } from './schedule/define-schedule.js';
export { createScheduler, Scheduler, type SchedulerOptions } from './schedule/scheduler.js';
export type { SchedulerEventMap } from './schedule/scheduler-events.js';
export { CronRule } from './schedule/cron-rule.js';
export { scheduleList, type ScheduleRow } from './sql/schedule-list.js';
export { scheduleSetPaused } from './sql/schedule-set-paused.js';

// flow control: limits on how many tasks run at once and start per period, across all workers
export { defineLimit, type LimitDefinition, type LimitOptions, type RateOptions, type Rate } from './limits/define-limit.js';
export type { LimitDeclaration } from './sql/limit-register-many.js';
export { limitList, type LimitRow } from './sql/limit-list.js';

// the worker runtime, for any leased table
export { createLeaseWorker, LeaseWorker, type StopOptions } from './worker/lease-worker.js';
export type { LeaseWorkerOptions, WorkerLogger } from './worker/lease-worker-options.js';
export type { RunOptions, RunSettings } from './worker/settings.js';
export type { RetentionOptions } from './retention/retention-options.js';
export type { RetentionReport } from './retention/retention-runner.js';
export type { RetryPolicy } from './transition-for.js';
export type { BackoffPolicy } from './backoff.js';
export type { HandlerContext } from './worker/handler-context.js';
export type { CommitHook } from './worker/finalizer.js';
export type { WorkerEventMap } from './worker/events.js';
export type { ReapedRow } from './sql/lease-claim.js';
export type { PoolCounts } from './worker/checkout-watch.js';
export type { TelemetryNaming } from './telemetry/worker-telemetry.js';
export {
  defineLeasedTable,
  taskTable,
  type LeasedTable,
  type LeasedTableOptions,
  type TaskRow,
} from './leased-table.js';
export type { Claimed, LeaseFields } from './sql/lease-row.js';

// where statements run: the application's pool, client or transaction
export type { Executor, PgQueryable } from './sql/execute.js';
// behind a pooler in transaction mode (docs/operations.md, "Poolers")
export { noPreparedStatements } from './sql/execute.js';
export type { PoolerOptions } from './worker/pooler-settings.js';
export {
  withTransaction,
  inTransaction,
  type TransactionSource,
  type TransactionHandle,
  type KyselyTransactionSource,
  type PgPoolLike,
} from './sql/transaction.js';

// operations a person runs on any leased table: monitoring, dead letters, retention
export { leaseStats, type LeaseStats } from './sql/lease-stats.js';
export { leaseQueueStats, type QueueStats } from './sql/lease-queue-stats.js';
export { leaseDeadList, type DeadRow, type DeadFields, type DeadListPage } from './sql/lease-dead-list.js';
export { leaseRetryDeadMany, leaseSkipDeadMany, type DeadResolution } from './sql/lease-resolve-dead-many.js';
export { leasePurgeDone } from './sql/lease-purge-done.js';

// observability: per-queue figures, and OpenTelemetry metrics (see docs/observability.md)
export { queueStats, type QueueStatsOptions } from './metrics/queue-stats.js';
export { createQueueMetrics, type QueueMetrics, type QueueMetricsOptions } from './metrics/queue-metrics.js';
export { METRICS, type MetricDefinition } from './metrics/metric-definitions.js';

// lower-level primitives, for code that drives the lease itself
export {
  claim,
  markDone,
  markDead,
  reschedule,
  extendLease,
  type ClaimOptions,
  type TableOptions,
  type RescheduleOptions,
  type LeaseToken,
} from './primitives.js';
export { dispatchOnce, type DispatchOnceOptions, type DispatchReport } from './dispatch-once.js';
export type { Outcome, OutcomeKind } from './outcome.js';
