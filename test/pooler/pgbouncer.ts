// A private PgBouncer in transaction mode in front of the test server, for the pooler tests:
// started by each test file that needs it and stopped before the file's database is dropped.
// Debian's `pgbouncer` package provides the binary (.ci/run installs it).
import { afterAll, beforeAll, inject } from 'vitest';
import { startPgBouncer, stopPgBouncer, throughPgBouncer, type RunningPgBouncer } from './pgbouncer-process.js';

export { databaseOf, startPgBouncer, stopPgBouncer, throughPgBouncer, type RunningPgBouncer } from './pgbouncer-process.js';

/** A running PgBouncer. */
export interface PgBouncer {
  /** The URL of `database` through PgBouncer. */
  url(database: string): string;
  /** Server connections PgBouncer keeps per database and user. */
  readonly poolSize: number;
}

/**
 * Registers hooks that start a PgBouncer in transaction mode before the file's tests and stop it
 * after them. Call it after `useTestDatabase()`: hooks after the tests run in reverse order, so
 * PgBouncer's server connections close before the file's database is dropped.
 */
export function usePgBouncer(options: { poolSize?: number } = {}): PgBouncer {
  const poolSize = options.poolSize ?? 10;
  let running: RunningPgBouncer | undefined;
  beforeAll(async () => {
    running = await startPgBouncer(inject('adminUrl'), poolSize);
  });
  afterAll(async () => {
    if (running !== undefined) await stopPgBouncer(running);
  });
  return {
    poolSize,
    url(database) {
      if (running === undefined) throw new Error('usePgBouncer: used outside a test');
      return throughPgBouncer(inject('adminUrl'), running.port, database);
    },
  };
}

