import { isLeaseholdError } from '@leasehold/core';

/**
 * A failure a person fixes from its message alone, in one line: a leasehold error (a
 * `DatabaseNotReadyError` says what to do) or a driver's or socket's error, which carries a code
 * (`3D000`, `ECONNREFUSED`). Undefined for anything else, a bug, whose stack is worth printing.
 */
export function failureLine(error: unknown): string | undefined {
  if (isLeaseholdError(error)) return error.message;
  const e = error as { code?: unknown; message?: string; errors?: { message?: string }[] } | null;
  if (typeof e?.code !== 'string') return undefined;
  // node reports a refused connect to a name with two addresses as an AggregateError without a message
  return `${e.message || e.errors?.[0]?.message || 'failed'} [${e.code}]`;
}
