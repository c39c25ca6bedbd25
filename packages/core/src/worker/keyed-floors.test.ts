import { describe, expect, it } from 'vitest';
import { KeyedFloors } from './keyed-floors.js';

describe('KeyedFloors', () => {
  it('keeps a floor per key, each starting at its range’s beginning for a window after its first sighting', () => {
    const f = new KeyedFloors<number>(1_000, 2_000);
    f.saw(0, 10, new Map([[0, '500']]));
    f.saw(1_100, 1_110, new Map([[0, '520'], [5, '900']]));
    // priority 0 is past its first window; priority 5 was first seen just now
    expect(f.entries()).toEqual(new Map([[0, '500'], [5, '0']]));
    f.saw(2_200, 2_210, new Map([[5, '950']]));
    expect(f.entries()).toEqual(new Map([[0, '500'], [5, '900']]));
    expect(f.below(5, '899')).toBe(true);
    expect(f.below(5, '900')).toBe(false);
  });

  it('keeps at most `max` keys, the ones seen latest: one let go is read from its start again', () => {
    const f = new KeyedFloors<number>(1_000, 2_000, 2);
    f.saw(0, 1, new Map([[1, '10']]));
    f.saw(2, 3, new Map([[2, '20']]));
    f.saw(4, 5, new Map([[1, '11']]));
    f.saw(6, 7, new Map([[3, '30']]));
    expect(f.keys().sort()).toEqual([1, 3]);
  });

  it('a probe says whether it saw a row below a floor the claims had passed, and is taken as a sighting', () => {
    const f = new KeyedFloors<number>(1_000, 2_000);
    f.saw(0, 10, new Map([[0, '500']]));
    f.saw(1_100, 1_110, new Map([[0, '520']]));
    expect(f.probed(1_200, 1_210, new Map([[0, '500']]))).toBe(false);
    // a row of id 450 committed late, below the floor of 500
    expect(f.probed(1_300, 1_310, new Map([[0, '450']]))).toBe(true);
    // a key not kept yet starts at its beginning: nothing lies below it
    expect(f.probed(1_400, 1_410, new Map([[7, '3']]))).toBe(false);
    expect(f.keys()).toEqual([0, 7]);
  });

  it('a reset sends every key back to its beginning until claims see past it', () => {
    const f = new KeyedFloors<string>(1_000, 2_000);
    f.saw(0, 1, new Map([['a', '10'], ['b', '20']]));
    f.saw(1_500, 1_501, new Map([['a', '15'], ['b', '25']]));
    expect(f.floors(['a', 'b'])).toEqual(['10', '20']);
    f.reset(1_600);
    expect(f.floors(['a', 'b'])).toEqual(['0', '0']);
  });
});
