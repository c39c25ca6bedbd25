/**
 * A resettable signal for the claim loop: `wait(ms)` resolves on the next `wake()` (with true)
 * or after `ms` (with false), whichever comes first. Wakes that arrive while nobody waits are
 * remembered once.
 */
export class Wakeup {
  #pending = false;
  #resolve: ((woken: boolean) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;

  wake(): void {
    if (this.#resolve) this.#finish(true);
    else this.#pending = true;
  }

  /**
   * Forgets a wake that arrived while nobody waited: the claim about to be sent covers what it
   * announced (see the claim loop). Wakes after this call are remembered as before.
   */
  clear(): void {
    this.#pending = false;
  }

  wait(ms: number): Promise<boolean> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      this.#resolve = resolve;
      this.#timer = setTimeout(() => this.#finish(false), ms);
    });
  }

  #finish(woken: boolean): void {
    clearTimeout(this.#timer);
    const resolve = this.#resolve;
    this.#resolve = undefined;
    this.#timer = undefined;
    resolve?.(woken);
  }
}
