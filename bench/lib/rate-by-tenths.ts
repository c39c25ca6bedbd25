// How a drain's rate moves as it goes: the rate over each tenth of its work, so that a drain that
// slows as it goes (reading more per item the further it is) shows it.

/**
 * Waits until `done()` reaches `total` (or `capMs` passed since `t0`), sampling every 20 ms, and
 * returns the rate per second over each tenth of `total`.
 */
export async function rateByTenths(done: () => number, total: number, t0: number, capMs: number): Promise<number[]> {
  const tenths: number[] = [];
  let mark = 0;
  let markAt = t0;
  for (;;) {
    await new Promise((r) => setTimeout(r, 20));
    const now = performance.now();
    // read once per sample: the last tenth is counted by the sample that sees the end
    const n = done();
    if (n - mark >= total / 10 || (n >= total && n > mark)) {
      tenths.push(Math.round(((n - mark) / (now - markAt)) * 1000));
      [mark, markAt] = [n, now];
    }
    if (n >= total || now - t0 >= capMs) return tenths;
  }
}
