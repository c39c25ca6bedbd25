/**
 * A fixed sequence of integers (xorshift32 from `seed`), so that a randomized test that fails
 * replays the same steps: each call returns the next one in `[0, n)`.
 */
export function seeded(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % n;
  };
}
