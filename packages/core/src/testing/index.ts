// Public API of @leasehold/core/testing: helpers for users' own tests.
export { startEmbeddedPostgres, type ThrowawayPostgres, type EmbeddedPostgresOptions } from './embedded-postgres.js';
export { expectTaskEnqueued, type EnqueuedTaskRow } from './expect-task-enqueued.js';
