import { describe, expect, it } from 'vitest';
import { refreshInterval } from './refresh-interval.js';

describe('refreshInterval', () => {
  it('keeps the configured interval while counting is quick', () => {
    expect(refreshInterval(5_000, 0)).toBe(5_000);
    expect(refreshInterval(5_000, 500)).toBe(5_000);
    expect(refreshInterval(500, 40)).toBe(500);
  });

  it('stretches it to ten times the counting time, in whole seconds', () => {
    expect(refreshInterval(5_000, 501)).toBe(6_000);
    expect(refreshInterval(5_000, 2_300)).toBe(23_000);
    expect(refreshInterval(500, 120)).toBe(2_000);
  });
});
