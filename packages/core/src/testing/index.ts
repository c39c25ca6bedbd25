// Public API of @leasehold/core/testing: helpers for users' own tests.
export { startEmbeddedPostgres, type ThrowawayPostgres, type EmbeddedPostgresOptions } from './embedded-postgres.js';
