/**
 * Waits for `work` until the `performance.now()` time `at`: resolves `true` if it settled by
 * then (fulfilled or rejected), `false` if the deadline came first. Leaves no timer behind.
 */
export async function settlesBy(work: Promise<unknown>, at: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, Math.max(0, at - performance.now()), false)));
  try {
    return await Promise.race([work.then(
      () => true,
      () => true,
    ), late]);
  } finally {
    clearTimeout(timer);
  }
}
