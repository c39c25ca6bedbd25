import { describe, expect, it } from 'vitest';
import { CronRule } from './cron-rule.js';
import { ticksToFire } from './ticks-to-fire.js';

const everySecond = new CronRule('* * * * * *', 'UTC');
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const state = (lastTick: number | null, now: number, paused = false) => ({
  lastTick: lastTick === null ? null : at(lastTick), paused, createdAt: at(0), seenBy: null, alive: false, now: new Date(at(now).getTime() + 400),
});

describe('ticksToFire', () => {
  it('a running scheduler fires the latest due tick, however late, and catchUp of the earlier ones', () => {
    expect(ticksToFire(everySecond, state(9, 10), 0, 'current')).toEqual({ fire: [at(10)], skipped: 0, advanceTo: at(10) });
    expect(ticksToFire(everySecond, state(0, 30), 0, 'current')).toEqual({ fire: [at(30)], skipped: 29, advanceTo: at(30) });
    expect(ticksToFire(everySecond, state(0, 30), 2, 'current')).toEqual({ fire: [at(28), at(29), at(30)], skipped: 27, advanceTo: at(30) });
  });

  it('at start, with nobody running it, every due tick was missed: catchUp most recent ones, oldest first', () => {
    expect(ticksToFire(everySecond, state(10, 30), 0, 'backlog')).toEqual({ fire: [], skipped: 20, advanceTo: at(30) });
    expect(ticksToFire(everySecond, state(10, 30), 3, 'backlog')).toEqual({ fire: [at(28), at(29), at(30)], skipped: 17, advanceTo: at(30) });
    expect(ticksToFire(everySecond, state(10, 12), 5, 'backlog')).toEqual({ fire: [at(11), at(12)], skipped: 0, advanceTo: at(12) });
  });

  it('nothing due: nothing to do; paused: every due tick skipped, none fired', () => {
    expect(ticksToFire(everySecond, state(10, 10), 3, 'current')).toEqual({ fire: [], skipped: 0, advanceTo: null });
    expect(ticksToFire(everySecond, state(10, 15, true), 3, 'current')).toEqual({ fire: [], skipped: 5, advanceTo: at(15) });
  });

  it('a schedule that never fired counts from when it was created', () => {
    expect(ticksToFire(everySecond, state(null, 3), 10, 'backlog')).toEqual({ fire: [at(1), at(2), at(3)], skipped: 0, advanceTo: at(3) });
  });
});
