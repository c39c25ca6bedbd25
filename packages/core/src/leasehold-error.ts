// The base class and ConfigError import nothing: every input check throws ConfigError, and
// errors.ts needs those checks (DeferError parses its delay), so keeping these two apart is what
// keeps errors.ts → duration.ts → input/ free of cycles.

/** Stable codes of every error leasehold throws; match on these, not on classes. */
export const ERROR_CODES = [
  'CONFIG',
  'RETRYABLE',
  'PERMANENT',
  'DEFER',
  'LEASE_LOST',
  'PAYLOAD_VALIDATION',
  'UNKNOWN_TASK',
  'HANDLER_TIMEOUT',
  'SHUTDOWN',
  'NOT_FOUND',
  'DATABASE_NOT_READY',
  'CANCELLED',
  'SUSPENDED',
  'CHILD_FAILED',
  'TASK_FAILED',
  'WAIT_TIMEOUT',
  'NON_DETERMINISM',
  'WORKER_STATE',
] as const;

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Base class of every error leasehold throws; `code` is stable across versions. */
export class LeaseholdError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * A setting or an argument is wrong. Thrown by the call that received it, before any SQL runs.
 *
 * @example
 * throw new ConfigError('lease', 'Expected `lease` to be a positive duration, got -1');
 */
export class ConfigError extends LeaseholdError {
  /** The option or field at fault, as a path: `lease`, `events[3].headers.x-tenant-token`. */
  readonly option: string;

  constructor(option: string, message: string) {
    super('CONFIG', message);
    this.option = option;
  }
}
