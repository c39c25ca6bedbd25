import { type DeferError, isLeaseholdError, type LeaseLostError, type RetryableError, toError } from './errors.js';

/** What became of one run of a handler; decides the fenced state change that follows. */
export type Outcome =
  /** Done: the task is finished (including "already in the target state"). */
  | { readonly kind: 'success' }
  /** Transient failure: back off and retry, or dead once attempts are exhausted. */
  | { readonly kind: 'retryable'; readonly error: Error; readonly retryAfterMs: number | undefined }
  /** Business hold: run again after `delayMs`, attempt refunded. */
  | { readonly kind: 'defer'; readonly delayMs: number; readonly reason: string }
  /** Retrying cannot help: dead, for a person to look at. */
  | { readonly kind: 'permanent'; readonly error: Error }
  /** The lease moved on while the handler ran: write nothing. */
  | { readonly kind: 'lease-lost'; readonly error: LeaseLostError };

/** The `kind`s of {@link Outcome}. */
export type OutcomeKind = Outcome['kind'];

/**
 * Classifies what a handler threw. `undefined` (nothing thrown) is success; `PermanentError`
 * and `DeferError` are what they say; anything else, including plain `Error`s and non-errors,
 * is a retryable failure (logged with its stack; stored without it, see {@link describeError}).
 */
export function classifyOutcome(thrown: unknown, threw: boolean): Outcome {
  if (!threw) return { kind: 'success' };
  if (isLeaseholdError(thrown, 'PERMANENT')) return { kind: 'permanent', error: thrown };
  if (isLeaseholdError(thrown, 'PAYLOAD_VALIDATION')) return { kind: 'permanent', error: thrown };
  // the code changed under the run: retrying the same code fails the same way (docs/workflows.md)
  if (isLeaseholdError(thrown, 'NON_DETERMINISM')) return { kind: 'permanent', error: thrown };
  if (isLeaseholdError(thrown, 'DEFER')) {
    const defer = thrown as unknown as DeferError;
    return { kind: 'defer', delayMs: defer.delayMs, reason: defer.reason };
  }
  if (isLeaseholdError(thrown, 'LEASE_LOST')) return { kind: 'lease-lost', error: thrown as unknown as LeaseLostError };
  const error = toError(thrown);
  const retryAfterMs = isLeaseholdError(thrown, 'RETRYABLE') ? (thrown as unknown as RetryableError).retryAfterMs : undefined;
  return { kind: 'retryable', error, retryAfterMs };
}

/** Compile-time exhaustiveness check for `switch` over a union. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/** Causes {@link describeError} follows, after the error itself. */
const MAX_CAUSES = 3;

/**
 * Text stored in `last_error` for an error: its name, its code when it has one that is not
 * leasehold's (a broker's `503`, a socket's `ECONNRESET`), its message, then the same of each
 * `cause` (up to three), bounded. Never the stack: `last_error` is what the dashboard shows every
 * viewer and the CLI prints, and a stack names the installation's files and modules. The worker's
 * log record keeps the stack (`err`), for whoever reads the logs.
 */
export function describeError(error: Error, limit = 2_000): string {
  let text = headline(error);
  let cause: unknown = error.cause;
  for (let n = 0; cause !== undefined && cause !== null && n < MAX_CAUSES; n++) {
    const next = toError(cause);
    // a wrapper often repeats its cause's message (PayloadValidationError): say it once
    if (!text.includes(next.message)) text += `; cause: ${headline(next)}`;
    cause = next.cause;
  }
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

function headline(error: Error): string {
  const code = (error as { code?: unknown }).code;
  // a leasehold error's name says what its code does
  const tagged = (typeof code === 'string' && code !== '') || typeof code === 'number' ? !isLeaseholdError(error) && !error.message.includes(String(code)) : false;
  return `${error.name || 'Error'}${tagged ? ` [${String(code)}]` : ''}: ${error.message}`;
}
