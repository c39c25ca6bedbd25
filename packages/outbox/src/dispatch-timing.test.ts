import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import { checkDispatchTiming, unconfirmedStartMs } from './dispatch-timing.js';

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

describe('unconfirmedStartMs', () => {
  it('is the latest start of the last of as many whole publish timeouts as fit strictly inside the lease', () => {
    expect(unconfirmedStartMs(5_000, 60_000)).toBe(50_000); // 11 × 5 s < 60 s: the 11th starts at 50 s
    expect(unconfirmedStartMs(10_000, 60_000)).toBe(40_000);
    expect(unconfirmedStartMs(7_000, 60_000)).toBe(49_000);
    expect(unconfirmedStartMs(59_999, 60_000)).toBe(0); // only a message published at once
  });

  it('lets a publish started by then, taking its whole timeout, end inside the lease, whatever the settings', () => {
    for (const timeout of [1, 999, 1_000, 7_001, 29_999, 30_000, 59_999]) {
      const startMs = unconfirmedStartMs(timeout, 60_000);
      expect(startMs).toBeGreaterThanOrEqual(0);
      expect(startMs + timeout).toBeLessThan(60_000);
    }
  });
});
