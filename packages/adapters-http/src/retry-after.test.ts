import { describe, expect, it } from 'vitest';
import { retryAfterMs } from './retry-after.js';

const nowMs = Date.parse('2025-01-01T12:00:00Z');

describe('retryAfterMs', () => {
  it('reads delta-seconds', () => {
    expect(retryAfterMs('120', { nowMs })).toBe(120_000);
    expect(retryAfterMs(' 0 ', { nowMs })).toBe(0);
  });

  it('reads an HTTP date against the response Date header when there is one', () => {
    const at = 'Wed, 01 Jan 2025 12:01:30 GMT';
    expect(retryAfterMs(at, { nowMs })).toBe(90_000);
    // the server's clock says 12:01:00: its 30 s count, not our 90
    expect(retryAfterMs(at, { nowMs, date: 'Wed, 01 Jan 2025 12:01:00 GMT' })).toBe(30_000);
    expect(retryAfterMs(at, { nowMs, date: 'not a date' })).toBe(90_000);
  });

  it('reads the obsolete date forms RFC 9110 still requires recipients to accept', () => {
    expect(retryAfterMs('Wednesday, 01-Jan-25 12:00:10 GMT', { nowMs })).toBe(10_000);
    expect(retryAfterMs('Wed Jan  1 12:00:20 2025', { nowMs: Date.parse('2025-01-01T12:00:00') })).toBe(20_000);
  });

  it('treats a date in the past as now', () => {
    expect(retryAfterMs('Wed, 01 Jan 2025 11:00:00 GMT', { nowMs })).toBe(0);
  });

  it('ignores absent and malformed values', () => {
    for (const value of [null, undefined, '', '  ', '-5', '1.5', '+3', 'soon', '12abc', '99999999999999999999']) {
      expect(retryAfterMs(value, { nowMs }), String(value)).toBeUndefined();
    }
  });
});
