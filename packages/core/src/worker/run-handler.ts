import type { TaskAbort } from './task-abort.js';

/**
 * Runs `work` until it settles or `abort` fires, whichever is first. On abort it rejects with
 * the abort's reason at once, so a handler that ignores its signal cannot hold the worker; its
 * late result is dropped (and any late write it attempts is stopped by the fence).
 */
export function runUntilAborted(work: () => Promise<unknown> | void, abort: TaskAbort): Promise<void> {
  if (abort.aborted) return Promise.reject(abort.reason);
  return new Promise<void>((resolve, reject) => {
    abort.onAbort = reject;
    let running: Promise<unknown> | void;
    try {
      running = work();
    } catch (error) {
      abort.onAbort = undefined;
      reject(error);
      return;
    }
    const settle = (error?: unknown, failed = false) => {
      abort.onAbort = undefined;
      if (failed) reject(error);
      else resolve();
    };
    if (running === undefined || typeof (running as Promise<unknown>).then !== 'function') settle();
    else (running as Promise<unknown>).then(() => settle(), (error: unknown) => settle(error, true));
  });
}
