import { fullJitterBackoff, type BackoffPolicy } from '../backoff.js';
import { parseDuration, type Duration } from '../duration.js';
import { ConfigError, RetryableError } from '../errors.js';
import { parseInteger } from '../input/integer.js';
import { checkOptionKeys, optionKeys } from '../input/options.js';
import { LeaseholdError } from '../leasehold-error.js';

/** Options of `ctx.step`. */
export interface StepOptions {
  /**
   * Calls the step's function again, within this run, when it throws: for a flaky call that
   * should not cost the whole task an attempt and its backoff. When the retries run out, the
   * last error fails the run as any handler error does, and the task's own retry policy takes
   * over (a later run starts at this step again, with its retries afresh).
   */
  readonly retry?: StepRetry;
}

/** How `ctx.step` retries its function (see {@link StepOptions.retry}). */
export interface StepRetry {
  /** Calls in all, the first included (1 to 100). @defaultValue 3 */
  readonly maxAttempts?: number;
  /**
   * Full-jitter backoff between calls: after the n-th failure a delay drawn from
   * `[0, min(cap, base · 2^(n-1)))`, and at least what a `RetryableError`'s `retryAfterMs` asks.
   * @defaultValue base 100 ms, cap 10 s
   */
  readonly backoff?: { readonly base?: Duration; readonly cap?: Duration };
}

/** What a step's retries are, checked. @internal */
export interface StepRetryPolicy {
  readonly maxAttempts: number;
  readonly backoff: BackoffPolicy;
}

const STEP_OPTIONS = optionKeys<StepOptions>()('ctx.step', ['retry']);
const RETRY_OPTIONS = optionKeys<StepRetry>()('`retry`', ['maxAttempts', 'backoff']);
const BACKOFF_OPTIONS = optionKeys<NonNullable<StepRetry['backoff']>>()('`retry.backoff`', ['base', 'cap']);
const DEFAULT_STEP_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 100, capMs: 10_000 });
/** A step's wait between calls is within one run, which holds its lease and slot meanwhile. */
const MAX_STEP_BACKOFF_MS = 60 * 60 * 1000;

/** `ctx.step`'s options, checked at the call (a `ConfigError` naming the option); undefined for no retry. @internal */
export function stepRetryPolicy(options: StepOptions | undefined, step: string): StepRetryPolicy | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) throw new ConfigError('options', `Expected the options of step "${step}" as an object`);
  checkOptionKeys(options, STEP_OPTIONS);
  const retry = options.retry;
  if (retry === undefined) return undefined;
  if (typeof retry !== 'object' || retry === null) throw new ConfigError('retry', `Expected \`retry\` of step "${step}" as an object`);
  checkOptionKeys(retry, RETRY_OPTIONS, 'retry.');
  const backoff = retry.backoff;
  if (backoff !== undefined && (typeof backoff !== 'object' || backoff === null)) throw new ConfigError('retry.backoff', `Expected \`retry.backoff\` of step "${step}" as an object`);
  checkOptionKeys(backoff, BACKOFF_OPTIONS, 'retry.backoff.');
  const baseMs = backoff?.base === undefined ? DEFAULT_STEP_BACKOFF.baseMs : parseDuration(backoff.base, 'retry.backoff.base', { max: MAX_STEP_BACKOFF_MS });
  const capMs = backoff?.cap === undefined ? Math.max(baseMs, DEFAULT_STEP_BACKOFF.capMs) : parseDuration(backoff.cap, 'retry.backoff.cap', { max: MAX_STEP_BACKOFF_MS });
  if (capMs < baseMs) throw new ConfigError('retry.backoff.cap', `Expected \`retry.backoff.cap\` of step "${step}" to be at least its base`);
  return { maxAttempts: parseInteger(retry.maxAttempts ?? 3, 'retry.maxAttempts', 1, 100), backoff: { baseMs, capMs } };
}

/**
 * Calls `fn` until it returns, up to the policy's attempts, waiting its backoff between calls.
 * Retried: any error but leasehold's own, and of those the transient ones (`RetryableError`, a
 * database not ready, a wait that timed out). Not retried: a `PermanentError` (retrying is
 * pointless), a `DeferError` (the task's deferral), the errors that stop the run (lease lost,
 * cancelled, suspended, replay mismatch, bad input), and anything once `signal` aborts (lease
 * lost, cancelled, timed out, stopping): the wait ends at once and the abort's reason is thrown.
 * @internal
 */
export async function callWithRetry<T>(fn: () => Promise<T> | T, policy: StepRetryPolicy | undefined, signal: AbortSignal): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (policy === undefined || attempt >= policy.maxAttempts || signal.aborted || !retriable(error)) throw error;
      const asked = error instanceof RetryableError ? (error.retryAfterMs ?? 0) : 0;
      await pause(Math.max(asked, fullJitterBackoff(attempt - 1, policy.backoff)), signal);
    }
  }
}

const TRANSIENT = new Set(['RETRYABLE', 'DATABASE_NOT_READY', 'WAIT_TIMEOUT']);

function retriable(error: unknown): boolean {
  return !(error instanceof LeaseholdError) || TRANSIENT.has(error.code);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
