import { describe, expect, it } from 'vitest';
import { ReadyFloor } from './ready-floor.js';

describe('ReadyFloor', () => {
  it('starts at the index beginning, then at the lowest candidate seen', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    expect(f.floor(0)).toBe('0');
    f.saw(10, '500');
    expect(f.floor(20)).toBe('500');
    f.saw(30, '520');
    expect(f.floor(40)).toBe('500');
  });

  it('keeps a sighting for the window, and the latest one older than it', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(0, '100');
    f.saw(500, '200');
    f.saw(900, '300');
    // at 1,600 the window starts at 600: 200 (at 500) is the latest sighting before it, so an
    // INSERT that took its id after 500 and committed within the window is not passed
    expect(f.floor(1_600)).toBe('200');
    expect(f.floor(1_950)).toBe('300');
    // with nothing newer, the last sighting stays however old it is
    expect(f.floor(100_000)).toBe('300');
  });

  it('goes back to the beginning after a reset, until a claim sent after it is older than the window', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(0, '100');
    f.reset(10);
    expect(f.floor(20)).toBe('0');
    f.saw(20, '50'); // a claim from the beginning found an unblocked row
    f.saw(1_500, '160');
    expect(f.floor(1_000)).toBe('0');
    expect(f.floor(1_600)).toBe('50');
    expect(f.floor(2_600)).toBe('160');
  });

  it('files a probe that returns late by the time it returned', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(100, '900');
    f.saw(50, '40'); // a probe sent earlier, back later: found a row the claims had passed
    expect(f.floor(200)).toBe('40');
  });

  it('probes once per interval, and only when the floor is past the beginning', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    expect(f.probeDue(5_000)).toBe(false); // floor 0: nothing to check
    f.saw(5_000, '10');
    expect(f.probeDue(5_100)).toBe(true);
    expect(f.probeDue(6_000)).toBe(false);
    expect(f.probeDue(7_200)).toBe(true);
  });
});
