/**
 * Exit codes of the `leasehold` command. Scripts can rely on them; the README lists them.
 */
export const EXIT_CODES = Object.freeze({
  /** The command did what was asked. */
  ok: 0,
  /**
   * It could not: the database is unreachable, the schema is not migrated, an id is unknown or
   * not dead (`dead retry` / `dead skip` then change nothing), there is no such task (`task show`,
   * `cancel`), or a statement failed.
   */
  failure: 1,
  /** The command line is wrong: unknown command or option, a missing argument, no database given. */
  usage: 2,
  /** Stopped by SIGINT / SIGTERM before it finished. `watch` exits 0 instead: that is how it ends. */
  interrupted: 130,
});

/** One of the values of {@link EXIT_CODES}. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];
