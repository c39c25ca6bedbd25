import { describe, expect, it } from 'vitest';
import { isLeaseholdError } from '../errors.js';
import { defineTask } from '../task/define-task.js';
import { defineSchedule } from './define-schedule.js';

const report = defineTask<{ day: string }>('report', { handler: () => {} });

function configError(fn: () => unknown): { option: string; message: string } {
  try {
    fn();
  } catch (error) {
    expect(isLeaseholdError(error, 'CONFIG'), String(error)).toBe(true);
    return error as { option: string; message: string };
  }
  throw new Error('expected a ConfigError');
}

describe('defineSchedule', () => {
  it('accepts 5-field and 6-field (seconds) expressions in a time zone', () => {
    const daily = defineSchedule('daily', report, { cron: '0 3 * * *', timezone: 'Europe/Berlin', payload: { day: 'x' } });
    expect(daily.rule.next(new Date('2026-03-28T12:00:00Z'))).toEqual(new Date('2026-03-29T01:00:00Z')); // 03:00 CEST
    const fast = defineSchedule('fast', report, { cron: '*/15 * * * * *', payload: (tick) => ({ day: tick.toISOString() }) });
    expect(fast.payloadFor(new Date(0))).toEqual({ day: '1970-01-01T00:00:00.000Z' });
  });

  it.each([
    ['an invalid cron expression', { cron: '61 * * * *' }, 'cron'],
    ['seven fields', { cron: '* * * * * * *' }, 'cron'],
    ['a date that never comes', { cron: '0 0 30 2 *' }, 'cron'],
    ['an empty expression', { cron: ' ' }, 'cron'],
    ['an unknown time zone', { cron: '* * * * *', timezone: 'Mars/Olympus' }, 'timezone'],
    ['catchUp NaN', { cron: '* * * * *', catchUp: Number.NaN }, 'catchUp'],
    ['catchUp negative', { cron: '* * * * *', catchUp: -1 }, 'catchUp'],
    ['catchUp fractional', { cron: '* * * * *', catchUp: 1.5 }, 'catchUp'],
  ])('refuses %s with a ConfigError naming the option, at definition', (_, options, option) => {
    expect(configError(() => defineSchedule('s', report, { payload: { day: 'x' }, ...options })).option).toBe(option);
  });

  it('refuses a missing payload, a payload the task cannot store, an ordered task and a bad name', () => {
    expect(configError(() => defineSchedule('s', report, { cron: '* * * * *' } as never)).option).toBe('payload');
    const sync = defineTask<object>('sync', { ordered: true, handler: () => {} });
    expect(configError(() => defineSchedule('s', sync, { cron: '* * * * *', payload: {} })).option).toBe('task');
    expect(configError(() => defineSchedule('', report, { cron: '* * * * *', payload: { day: 'x' } })).option).toBe('name');
    expect(() => defineSchedule('s', report, { cron: '* * * * *', payload: { day: '\u0000' } })).toThrow(/NUL/);
  });
});
