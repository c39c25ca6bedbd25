import { describe, expect, it } from 'vitest';
import { PROBE_COST_SPACING, ProbeSpacing } from './probe-spacing.js';

describe('ProbeSpacing', () => {
  it('lets the next probe go out only after ten times the last one’s duration', () => {
    const s = new ProbeSpacing();
    expect(s.allowed(0)).toBe(true);
    // a probe that read for 300 ms (millions of dead entries): the next waits 3 s after it
    s.ran(1_000, 1_300);
    expect(s.allowed(1_300 + PROBE_COST_SPACING * 300 - 1)).toBe(false);
    expect(s.allowed(1_300 + PROBE_COST_SPACING * 300)).toBe(true);
    // a cheap one leaves the poll interval (the floors' own cadence) in charge
    s.ran(5_000, 5_002);
    expect(s.allowed(5_030)).toBe(true);
  });
});
