declare const resultType: unique symbol;

/**
 * A task's id, carrying the type its handler returns, so `waitForResult`, `getTask` and
 * `ctx.waitForChildren` give typed results: what `enqueue` and `ctx.spawn` return.
 */
export interface TaskRef<R = unknown> {
  readonly id: string;
  /** Carries the result type; never set. */
  readonly [resultType]?: R;
}
