/**
 * Exit codes of the `leasehold` command. Scripts can rely on them; the README lists them.
 */
export const EXIT_CODES = Object.freeze({
  /** The command did what was asked. */
  ok: 0,
  /**
   * It could not: the database is unreachable, the schema is not migrated, an id is unknown or
   * not dead (`dead retry` / `dead skip` then change nothing), there is no such task (`task show`,
   * `cancel`), or a statement failed; `worker`: a task module failed to load, exports no task
   * definition, or two modules define one task name.
   */
  failure: 1,
  /** The command line is wrong: unknown command or option, a missing argument, no database given. */
  usage: 2,
  /**
   * Stopped by SIGINT / SIGTERM before it finished. `watch`, `dashboard` and `worker` exit 0
   * instead: that is how they end (`worker` once its running tasks finished or were handed back).
   */
  interrupted: 130,
});

/** One of the values of {@link EXIT_CODES}. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];
