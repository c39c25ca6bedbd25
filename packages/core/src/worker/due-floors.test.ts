import { describe, expect, it } from 'vitest';
import { DUE_BEGINNING } from '../sql/lease-claim.js';
import { DUE_FLOOR_WINDOW_MS, DueFloors } from './due-floors.js';

describe('DueFloors', () => {
  it('reads each source from its start until its claims have seen past it for a window', () => {
    const f = new DueFloors(2_000);
    expect(f.entries()).toEqual(new Map());
    f.saw(0, 10, new Map([['due', '1700000000000000:42']]));
    // first seen just now: from the start for the window, as a new worker's
    expect(f.entries()).toEqual(new Map([['due', DUE_BEGINNING]]));
    f.saw(DUE_FLOOR_WINDOW_MS + 100, DUE_FLOOR_WINDOW_MS + 110, new Map([['due', '1700000000500000:7'], ['parked', '1700000000400000:9']]));
    expect(f.entries()).toEqual(new Map([['due', '1700000000000000:42'], ['parked', DUE_BEGINNING]]));
  });

  it('orders positions as the index does: by due time, then id, before the epoch too', () => {
    const f = new DueFloors(2_000);
    f.saw(0, 1, new Map([['due', '-5000000:3']]));
    f.saw(DUE_FLOOR_WINDOW_MS + 10, DUE_FLOOR_WINDOW_MS + 11, new Map([['due', '-5000000:4']]));
    expect(f.entries().get('due')).toBe('-5000000:3');
    // the same due time with a lower id lies below; a later due time with any id does not
    expect(f.probed(DUE_FLOOR_WINDOW_MS + 20, DUE_FLOOR_WINDOW_MS + 21, new Map([['due', '-5000000:2']]))).toBe(true);
    expect(f.entries().get('due')).toBe('-5000000:2');
    expect(f.probed(DUE_FLOOR_WINDOW_MS + 30, DUE_FLOOR_WINDOW_MS + 31, new Map([['due', '-4999999:1']]))).toBe(false);
    expect(f.probed(DUE_FLOOR_WINDOW_MS + 40, DUE_FLOOR_WINDOW_MS + 41, new Map([['due', '-5000000:18446744073709551615']]))).toBe(false);
  });

  it('a reset sends every source back to its start', () => {
    const f = new DueFloors(2_000);
    f.saw(0, 1, new Map([['parked', '100:1']]));
    f.saw(DUE_FLOOR_WINDOW_MS + 10, DUE_FLOOR_WINDOW_MS + 11, new Map([['parked', '200:2']]));
    expect(f.entries().get('parked')).toBe('100:1');
    f.reset(DUE_FLOOR_WINDOW_MS + 20);
    expect(f.entries().get('parked')).toBe(DUE_BEGINNING);
    expect(f.probeDue(DUE_FLOOR_WINDOW_MS + 30)).toBe(false);
  });
});
