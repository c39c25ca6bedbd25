import { RetryableError } from '../errors.js';

/**
 * The error to throw once the dispatcher's signal fired: its own reason when that is a
 * leasehold error (lease lost, handler timeout, shutdown), so the dispatcher records what
 * really happened; a retryable error otherwise. @internal
 */
export function abortReason(signal: AbortSignal, what: string): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name !== 'AbortError'
    ? reason
    : new RetryableError(`${what}: aborted by the dispatcher`, { cause: reason });
}

/**
 * Resolves or rejects like `promise`, or rejects with {@link abortReason} as soon as `signal`
 * fires: no await in a publish outlives the dispatcher's signal. The promise itself goes on
 * (a NATS request ends at its own timeout) and its late outcome is ignored. @internal
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(abortReason(signal, what));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal, what));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Like `promise`, but rejects with `onTimeout()` after `ms`. @internal */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
