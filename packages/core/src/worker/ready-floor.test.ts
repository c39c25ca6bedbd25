import { describe, expect, it } from 'vitest';
import { ReadyFloor } from './ready-floor.js';

describe('ReadyFloor', () => {
  it('starts at the index beginning, and stays there for a window after the first sighting', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    expect(f.floor()).toBe('0');
    f.saw(0, 10, '500');
    // a row whose INSERT came before the worker's first claim may commit after it
    expect(f.floor()).toBe('0');
    f.saw(1_100, 1_110, '520');
    expect(f.floor()).toBe('500');
  });

  it('keeps the sightings within the window of the latest one, and the last before it', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(0, 5, '100');
    f.saw(500, 505, '200');
    f.saw(900, 905, '300');
    f.saw(1_600, 1_605, '400');
    // the latest was sent at 1,600: the edge is 600; 200 (returned at 505) is the last before it
    expect(f.floor()).toBe('200');
  });

  it('counts from the latest sighting, not from now: a long pause passes no row that committed meanwhile', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(-5_000, -4_990, '90');
    f.saw(0, 5, '100'); // before a producer took id 150
    f.saw(100, 105, '160'); // the producer's 150 not committed yet
    f.saw(200, 205, '170');
    // the producer commits at 300; the worker's next claim comes only at 60,000, and starts at
    // or below 150 (by time since now, 90 and 100 would have left the window long ago)
    expect(BigInt(f.floor())).toBeLessThanOrEqual(150n);
    expect(f.floor()).toBe('90');
  });

  it('goes back to the beginning after a reset, until a claim after it has seen past', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(-5_000, -4_990, '100');
    f.reset(10);
    expect(f.floor()).toBe('0');
    f.saw(20, 25, '50'); // a claim from the beginning found an unblocked row
    expect(f.floor()).toBe('0');
    f.saw(1_500, 1_505, '160');
    expect(f.floor()).toBe('50');
  });

  it('goes back to the lowest row a write unblocked, not lower, until a claim after it has seen past', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(-5_000, -4_990, '100');
    f.saw(0, 5, '300');
    f.lowerTo(10, '120');
    expect(f.floor()).toBe('100'); // the earlier sighting is still within the window
    f.saw(1_100, 1_105, '320');
    expect(f.floor()).toBe('120');
    f.saw(2_200, 2_205, '330');
    expect(f.floor()).toBe('320');
  });

  it('files a probe that returns late by the time it returned', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    f.saw(-5_000, -4_990, '10');
    f.saw(90, 100, '900');
    f.saw(40, 150, '40'); // a probe sent earlier, back later: found a row the claims had passed
    f.saw(2_000, 2_010, '950');
    expect(f.floor()).toBe('40');
  });

  it('probes once per interval, and only when the floor is past the beginning', () => {
    const f = new ReadyFloor(1_000, 2_000, 0);
    expect(f.probeDue(5_000)).toBe(false); // floor 0: nothing to check
    f.saw(-5_000, -4_990, '5');
    f.saw(5_000, 5_010, '10');
    expect(f.probeDue(5_100)).toBe(true);
    expect(f.probeDue(6_000)).toBe(false);
    expect(f.probeDue(7_200)).toBe(true);
  });
});
