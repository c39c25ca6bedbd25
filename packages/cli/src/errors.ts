import { EXIT_CODES, type ExitCode } from './exit-codes.js';

/** The command line is wrong; the message says what to change. Exit code 2. */
export class UsageError extends Error {
  readonly exitCode: ExitCode = EXIT_CODES.usage;
  override readonly name = 'UsageError';
}

/** The command could not do its job (unreachable database, unmigrated schema, unknown ids). Exit code 1. */
export class CommandError extends Error {
  readonly exitCode: ExitCode = EXIT_CODES.failure;
  override readonly name = 'CommandError';
}
