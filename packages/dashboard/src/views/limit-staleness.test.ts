import type { LimitRow } from '@leasehold/core';
import { describe, expect, it } from 'vitest';
import { movedTasks } from './limit-staleness.js';

function limit(name: string, taskNames: string[], seenAt: string): LimitRow {
  return {
    name, taskNames, concurrency: 1, concurrencyPerKey: null, rate: null, ratePerKey: null,
    running: 0, runningKeys: 0, startsInWindow: 0, waiting: 0, seenAt: new Date(seenAt), seenBy: null,
  };
}

describe('movedTasks', () => {
  it('names the task names a later-declared limit took over, the latest one for each', () => {
    const moved = movedTasks([
      limit('old', ['a', 'b'], '2026-01-01T00:00:00Z'),
      limit('mid', ['a'], '2026-01-02T00:00:00Z'),
      limit('new', ['a'], '2026-01-03T00:00:00Z'),
      limit('other', ['c'], '2026-01-04T00:00:00Z'),
    ]);
    expect(moved.get('old')).toEqual([{ taskName: 'a', limit: 'new', seenAt: new Date('2026-01-03T00:00:00Z') }]);
    expect(moved.get('mid')).toEqual([{ taskName: 'a', limit: 'new', seenAt: new Date('2026-01-03T00:00:00Z') }]);
    // the latest declaration of a task name, and a limit of unrelated tasks declared later, move nothing
    expect(moved.get('new')).toEqual([]);
    expect(moved.get('other')).toEqual([]);
  });
});
