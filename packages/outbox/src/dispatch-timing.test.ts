import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import { checkDispatchTiming, heldLimit } from './dispatch-timing.js';

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

describe('heldLimit', () => {
  it('gives each slot as many publish timeouts as fit strictly inside the lease', () => {
    expect(heldLimit(8, 5_000, 60_000)).toBe(88); // 11 × 5 s < 60 s; 12 would equal it
    expect(heldLimit(8, 10_000, 60_000)).toBe(40);
    expect(heldLimit(8, 7_000, 60_000)).toBe(64);
    expect(heldLimit(1, 59_999, 60_000)).toBe(1);
  });

  it('holds no more than the slots publish inside one lease, one after another, whatever the settings', () => {
    for (const concurrency of [1, 3, 8, 50]) {
      for (const timeout of [1, 999, 1_000, 7_001, 29_999, 30_000, 59_999]) {
        const held = heldLimit(concurrency, timeout, 60_000);
        expect(held).toBeGreaterThanOrEqual(concurrency);
        // the slot that publishes the most takes ceil(held / concurrency) timeouts
        expect(Math.ceil(held / concurrency) * timeout).toBeLessThan(60_000);
      }
    }
  });
});
