// Public API of @leasehold/core, name by name.

export { TASK_STATUSES, type TaskStatus } from './task-status.js';
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
  isLeaseholdError,
  toError,
} from './errors.js';
export { parseDuration, parseInteger, type Duration } from './duration.js';
export { fullJitterBackoff, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
export { classifyOutcome, assertNever, describeError, type Outcome, type OutcomeKind } from './outcome.js';
export { toDone, toRetry, toDeferred, toReleased, toDead, type Transition } from './transition.js';
export { transitionFor, type RetryPolicy } from './transition-for.js';
export { validateIdentifier } from './identifier.js';
// input checks: the limits are public (the READMEs print them); the checks, marked @internal,
// are what the sibling packages call so that each rule has one source
export { INPUT_LIMITS, INTEGER_RANGES, type IntegerRange } from './input/limits.js';
export { checkInteger, checkRowId, isRowId } from './input/integer.js';
export { checkText, checkName, checkKey, textFault, type TextRule } from './input/text.js';
export { checkHeaders } from './input/headers.js';
export { toJsonText } from './input/json.js';
export {
  defineLeasedTable,
  taskTable,
  type LeasedTable,
  type LeasedTableOptions,
  type TaskRow,
} from './leased-table.js';
export { execute, type Executor, type PgQueryable } from './sql/execute.js';
export {
  withTransaction,
  inTransaction,
  type TransactionSource,
  type TransactionHandle,
  type KyselyTransactionSource,
  type PgPoolLike,
} from './sql/transaction.js';
export { tokenKey, type Claimed, type LeaseFields } from './sql/lease-row.js';
export {
  leaseClaim,
  compareIds,
  REAP_ERROR,
  type LeaseClaimInput,
  type LeaseClaimResult,
  type ReapedRow,
} from './sql/lease-claim.js';
export { leaseFinalizeMany, type FinalizeItem, type FinalizeResult } from './sql/lease-finalize-many.js';
export { leaseExtendMany, type ExtendItem } from './sql/lease-extend-many.js';
export { leaseLockGroups, leaseLockGroupsOfRows } from './sql/lease-lock-groups.js';
export { leaseSettleGroups } from './sql/lease-settle-groups.js';
// operations a person runs on any leased table: monitoring, dead letters, retention
export { leaseStats, type LeaseStats } from './sql/lease-stats.js';
export { leaseQueueStats, type QueueStats } from './sql/lease-queue-stats.js';
export { leaseDeadList, type DeadRow, type DeadFields, type DeadListPage } from './sql/lease-dead-list.js';
export { leaseRetryDeadMany, leaseSkipDeadMany, type DeadResolution } from './sql/lease-resolve-dead-many.js';
export { leasePurgeDone } from './sql/lease-purge-done.js';
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
export { migrate, applyMigrationLine, type MigrateOptions, type MigrateResult, type MigrationLine } from './migrate/migrator.js';
export type { Migration } from './migrate/migration.js';
export { taskInsertMany, type TaskInsert, type InsertedTask } from './sql/task-insert-many.js';
export { taskCheckpoint } from './sql/task-checkpoint.js';

// typed tasks
export {
  defineTask,
  type TaskDefinition,
  type TaskOptions,
  type TaskContext,
  type PayloadValidator,
} from './task/define-task.js';
export type { EnqueueOptions } from './task/enqueue-options.js';
export { enqueue, enqueueMany, type EnqueueItem } from './task/enqueue.js';
export { createWorker, type Worker, type WorkerOptions } from './task/create-worker.js';

// telemetry (OpenTelemetry, an optional peer dependency)
export { currentTraceHeaders, TRACE_HEADERS } from './telemetry/trace-headers.js';
export { withSpan, type SpanAttributes, type SpanHandle, type SpanKindName, type SpanOptions } from './telemetry/with-span.js';

// schedules
export { defineSchedule, MAX_CATCH_UP, type ScheduleDefinition, type ScheduleOptions } from './schedule/define-schedule.js';
export { createScheduler, Scheduler, type SchedulerOptions } from './schedule/scheduler.js';
export type { SchedulerEventMap } from './schedule/scheduler-events.js';
export { CronRule } from './schedule/cron-rule.js';
export { scheduleList, type ScheduleRow } from './sql/schedule-list.js';
export { scheduleSetPaused } from './sql/schedule-set-paused.js';

// the worker runtime, for any leased table
export { createLeaseWorker, LeaseWorker, type StopOptions } from './worker/lease-worker.js';
export type { LeaseWorkerOptions, WorkerLogger } from './worker/lease-worker-options.js';
export type { HandlerContext } from './worker/handler-context.js';
export type { CommitHook } from './worker/finalizer.js';
export type { WorkerEventMap } from './worker/events.js';
export type { PoolCounts } from './worker/checkout-watch.js';
export { runSettings, type RunOptions, type RunSettings } from './worker/settings.js';
export {
  DatabaseNotReadyError,
  DATABASE_NOT_READY_REASONS,
  MIGRATE_HINT,
  describeDatabaseError,
  type DatabaseNotReadyReason,
} from './worker/database-not-ready-error.js';
/** @internal for @leasehold/outbox: core's migration line, which its dispatcher requires at start(). */
export { CORE_MIGRATION_LINE } from './worker/core-migration-line.js';
