/** Whether `value` is a promise or any other thenable (what `await` would wait for). */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
