/**
 * A resettable signal for the claim loop: `wait(ms)` resolves on the next `wake()` or after
 * `ms`, whichever comes first. Wakes that arrive while nobody waits are remembered once.
 */
export class Wakeup {
  #pending = false;
  #resolve: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;

  wake(): void {
    if (this.#resolve) this.#finish();
    else this.#pending = true;
  }

  wait(ms: number): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(() => this.#finish(), ms);
    });
  }

  #finish(): void {
    clearTimeout(this.#timer);
    const resolve = this.#resolve;
    this.#resolve = undefined;
    this.#timer = undefined;
    resolve?.();
  }
}
