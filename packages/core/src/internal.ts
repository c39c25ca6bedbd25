/**
 * `@leasehold/core/internal`: what leasehold's own packages (`@leasehold/outbox`, the adapters,
 * the CLI, the dashboard) share with core, and what its tests and benchmarks reach into.
 *
 * @internal Unstable: no semver promise. Any name here may change or go in any release, a patch
 * release included. Applications import from `@leasehold/core`; if you need something from this
 * list, open an issue saying what for, so it can become public API.
 *
 * @packageDocumentation
 */

// errors and outcomes: every catch passes its value through toError (STYLE 9)
export { toError } from './errors.js';
export { classifyOutcome, assertNever, describeError } from './outcome.js';

// durations, integers, backoff
export { parseDuration, parseInteger } from './duration.js';
export { fullJitterBackoff, DEFAULT_BACKOFF } from './backoff.js';

// input checks: each rule has one source, which the sibling packages call
export { validateIdentifier } from './identifier.js';
export { checkInteger, checkRowId, isRowId } from './input/integer.js';
export { checkText, checkName, checkKey, textFault, type TextRule } from './input/text.js';
export { checkHeaders } from './input/headers.js';
export { toJsonText } from './input/json.js';
export { checkOptionKeys, optionKeys, unknownKey, unknownOption, type KnownOptions } from './input/options.js';

// the fenced state changes and the statements of the lease engine
export { toDone, toRetry, toDeferred, toReleased, toDead, type Transition } from './transition.js';
export { transitionFor } from './transition-for.js';
export { execute, type ExecuteOptions } from './sql/execute.js';
export { statusIs } from './sql/fence.js';
export { tokenKey } from './sql/lease-row.js';
export { leaseClaim, compareIds, REAP_ERROR, type LeaseClaimInput, type LeaseClaimResult } from './sql/lease-claim.js';
export { jsonDate, type ClaimJson, type ClaimJsonType } from './sql/claim-json.js';
export { withClaimJson } from './leased-table.js';
export { leaseFinalizeMany, type FinalizeItem, type FinalizeResult } from './sql/lease-finalize-many.js';
export { leaseExtendMany, type ExtendItem, type ExtendOptions } from './sql/lease-extend-many.js';
export { leaseLockFinishingGroups, leaseLockGroups, leaseLockGroupsOfRows } from './sql/lease-lock-groups.js';
export { leaseSettleGroups } from './sql/lease-settle-groups.js';
export { taskInsertMany, type TaskInsert } from './sql/task-insert-many.js';
export { limitRegisterMany, type LimitDeclaration } from './sql/limit-register-many.js';
export { taskCheckpoint } from './sql/task-checkpoint.js';
export { taskStepRecordMany, type StepRecord } from './sql/task-steps.js';
export { stepsAndDoneWrite, type StepsAndDone } from './sql/steps-and-done.js';
export { taskIdAt } from './sql/task-list.js';

// migration lines of other packages, on core's migrator
export { applyMigrationLine, type MigrationLine } from './migrate/migrator.js';
export type { Migration } from './migrate/migration.js';
/** Core's migration line, which the outbox's dispatcher requires at start(). */
export { CORE_MIGRATION_LINE } from './worker/core-migration-line.js';

// the worker's settings, and the words start() and the CLI share
export { runSettings } from './worker/settings.js';
export { MIGRATE_HINT, describeDatabaseError, errorCode } from './worker/database-not-ready-error.js';

// the queue gauges, for `leasehold stats --format prometheus`
export { QUEUE_GAUGE_VALUES, queueAttributes, type QueueGauge } from './metrics/queue-gauges.js';
export { leaseLiveQueueStats, type LiveQueueStats } from './sql/lease-live-stats.js';
export { leasePurgeFinished, RESULT_HOLD_MS, type FinishedStatus } from './sql/lease-purge-finished.js';
export { retentionSettings, type RetentionSettings } from './retention/retention-options.js';
export { retentionTakeTurn } from './sql/retention-turn.js';

// telemetry (OpenTelemetry, an optional peer dependency) for the publishers and the inbox
export { currentTraceHeaders, TRACE_HEADERS } from './telemetry/trace-headers.js';
export { withSpan, type SpanAttributes, type SpanHandle, type SpanKindName, type SpanOptions } from './telemetry/with-span.js';

// for the broker adapters' publishers and consumers: waits bounded by a timeout or a signal, and
// per-key lanes that apply one aggregate's messages in order
export { untilAborted, withTimeout } from './consume/bounded.js';
export { KeyedLanes } from './consume/keyed-lanes.js';
