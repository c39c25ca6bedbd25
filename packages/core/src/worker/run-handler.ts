/**
 * Runs `work` until it settles or `signal` aborts, whichever is first. On abort it rejects with
 * the signal's reason at once, so a handler that ignores its signal cannot hold the worker; its
 * late result is dropped (and any late write it attempts is stopped by the fence).
 */
export function runUntilAborted(work: () => Promise<unknown>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let running: Promise<unknown>;
    try {
      running = work();
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
