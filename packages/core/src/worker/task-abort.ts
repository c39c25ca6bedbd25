/**
 * Why and whether a task's handler must stop, with its `AbortSignal` made only when someone asks
 * for it: most handlers never read `ctx.signal`, and an `AbortController` with the worker's
 * listener on its signal costs some 4 µs per task (bench/RESULTS.md, P7). Aborting works the
 * same either way: the signal, if made, fires; the worker's own wait for the handler ends.
 * @internal
 */
export class TaskAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get aborted(): boolean {
    return this.#aborted;
  }

  /** What the abort was given (`LeaseLostError`, `HandlerTimeoutError`, `ShutdownError`). */
  get reason(): unknown {
    return this.#reason;
  }

  /** The handler's signal; fires with the abort's reason (at once if already aborted). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.onAborted(reason);
  }

  /**
   * Called once, after the abort: the worker stops waiting for the handler. A method rather than
   * a callback set per task: this object is made for every task a worker claims.
   */
  protected onAborted(_reason: unknown): void {}
}
