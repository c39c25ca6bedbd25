import { MIGRATIONS } from '../migrate/generated-migrations.js';
import type { MigrationLine } from '../migrate/migrator.js';

/**
 * Core's migration line, as `migrate()` applies it: what a worker on core's task table (or on a
 * table built on core's trigger functions, like the outbox) requires at `start()`.
 * @internal for `@leasehold/outbox`; not covered by semver.
 */
export const CORE_MIGRATION_LINE: MigrationLine = Object.freeze({ line: 'core', migrations: MIGRATIONS });
