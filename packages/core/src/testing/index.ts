/**
 * Helpers for applications' own tests: a throwaway PostgreSQL, and an assertion that a task was
 * enqueued.
 *
 * @module @leasehold/core/testing
 */

// Public API of @leasehold/core/testing, name by name.
export { startEmbeddedPostgres, type ThrowawayPostgres, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { expectTaskEnqueued, type EnqueuedTaskRow } from './expect-task-enqueued.js';
