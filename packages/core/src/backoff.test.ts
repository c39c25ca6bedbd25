import { describe, expect, it } from 'vitest';
import { fullJitterBackoff } from './backoff.js';

describe('fullJitterBackoff', () => {
  const policy = { baseMs: 1_000, capMs: 300_000 };

  it('stays within [0, min(cap, base·2^attempt)) for every attempt', () => {
    for (let attempt = 0; attempt < 80; attempt++) {
      const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** attempt);
      expect(fullJitterBackoff(attempt, policy, () => 0)).toBe(0);
      const top = fullJitterBackoff(attempt, policy, () => 0.999_999);
      expect(top).toBeLessThan(ceiling);
      expect(top).toBeGreaterThanOrEqual(Math.floor(ceiling * 0.999));
    }
  });

  it('is capped, and finite even when 2^attempt overflows', () => {
    expect(fullJitterBackoff(5_000, policy, () => 0.5)).toBe(150_000);
  });

  it('spreads retries: many draws cover the range rather than bunch', () => {
    const draws = Array.from({ length: 2_000 }, () => fullJitterBackoff(3, policy));
    expect(Math.min(...draws)).toBeLessThan(800);
    expect(Math.max(...draws)).toBeGreaterThan(7_200);
  });
});
