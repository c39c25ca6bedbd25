import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '@leasehold/core';
import { checkDispatchTiming } from './dispatch-timing.js';

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
