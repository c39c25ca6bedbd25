import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import { checkDispatchTiming, fittingBatch } from './dispatch-timing.js';

describe('checkDispatchTiming', () => {
  it('accepts a batch whose worst case fits in the lease', () => {
    expect(() => checkDispatchTiming({ batch: 8, publishTimeoutMs: 5_000, leaseMs: 60_000 })).not.toThrow();
    expect(() => checkDispatchTiming({ batch: 1, publishTimeoutMs: 59_999, leaseMs: 60_000 })).not.toThrow();
  });

  it('refuses batch × timeout at or beyond the lease, with a ConfigError naming the numbers', () => {
    for (const timing of [
      { batch: 10, publishTimeoutMs: 10_000, leaseMs: 60_000 },
      { batch: 6, publishTimeoutMs: 10_000, leaseMs: 60_000 },
      { batch: 1, publishTimeoutMs: 60_000, leaseMs: 60_000 },
    ]) {
      let error: unknown;
      try {
        checkDispatchTiming(timing);
      } catch (e) {
        error = e;
      }
      expect(isLeaseholdError(error, 'CONFIG')).toBe(true);
      expect((error as Error).message).toContain(`${timing.batch} × ${timing.publishTimeoutMs} ms`);
    }
  });
});

describe('fittingBatch', () => {
  it('is concurrency when that fits, else the largest batch that does', () => {
    expect(fittingBatch(8, 5_000, 60_000)).toBe(8);
    expect(fittingBatch(8, 10_000, 60_000)).toBe(5); // 6 × 10 s would equal the lease
    expect(fittingBatch(8, 7_000, 60_000)).toBe(8);
    expect(fittingBatch(8, 9_000, 60_000)).toBe(6);
  });

  it('always passes checkDispatchTiming while one publish fits in the lease', () => {
    for (const concurrency of [1, 3, 8, 50]) {
      for (const timeout of [1, 999, 1_000, 7_001, 29_999, 30_000, 59_999]) {
        const batch = fittingBatch(concurrency, timeout, 60_000);
        expect(batch).toBeGreaterThanOrEqual(1);
        expect(batch).toBeLessThanOrEqual(concurrency);
        expect(() => checkDispatchTiming({ batch, publishTimeoutMs: timeout, leaseMs: 60_000 })).not.toThrow();
      }
    }
    expect(fittingBatch(8, 60_000, 60_000)).toBe(1);
    expect(() => checkDispatchTiming({ batch: 1, publishTimeoutMs: 60_000, leaseMs: 60_000 })).toThrow();
  });
});
