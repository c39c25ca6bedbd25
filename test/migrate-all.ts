import type pg from 'pg';

/**
 * Migrations of the packages beyond core, applied to the template database. Each package adds
 * its own line here when it gains a migration line.
 */
export async function migrateAll(_pool: pg.Pool): Promise<void> {}
