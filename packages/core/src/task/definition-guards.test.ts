import { describe, expect, it } from 'vitest';
import { defineSchedule } from '../schedule/define-schedule.js';
import { defineTask } from './define-task.js';
import { isScheduleDefinition, isTaskDefinition } from './definition-guards.js';

const task = defineTask<{ n: number }>('guarded', { handler: () => {} });
const schedule = defineSchedule('guarded-hourly', task, { cron: '0 * * * *', payload: { n: 1 } });

describe('isTaskDefinition / isScheduleDefinition', () => {
  it('recognise what defineTask and defineSchedule return, and only that', () => {
    expect(isTaskDefinition(task)).toBe(true);
    expect(isScheduleDefinition(schedule)).toBe(true);
    expect(isTaskDefinition(schedule)).toBe(false);
    expect(isScheduleDefinition(task)).toBe(false);
  });

  it('recognise a copy made by another instance of the package (same shape, frozen)', () => {
    expect(isTaskDefinition(Object.freeze({ ...task }))).toBe(true);
    expect(isScheduleDefinition(Object.freeze({ ...schedule, task: Object.freeze({ ...task }) }))).toBe(true);
  });

  it('refuse look-alikes: a hand-made object with a name and a handler, its unfrozen copy, other values', () => {
    expect(isTaskDefinition({ name: 'x', handler: () => {} })).toBe(false);
    expect(isTaskDefinition({ ...task })).toBe(false);
    for (const value of [null, undefined, 'guarded', 42, () => {}, [task]]) {
      expect(isTaskDefinition(value)).toBe(false);
      expect(isScheduleDefinition(value)).toBe(false);
    }
    expect(isScheduleDefinition(Object.freeze({ ...schedule, task: { name: 'x', handler: () => {} } }))).toBe(false);
  });
});
