import { describe, expect, it } from 'vitest';
import { KeyedLanes } from './keyed-lanes.js';

const tick = () => new Promise((r) => setTimeout(r, 1));

describe('KeyedLanes', () => {
  it('runs one task per key at a time, in push order, and different keys in parallel up to the limit', async () => {
    const lanes = new KeyedLanes(3);
    const log: string[] = [];
    let running = 0;
    let peak = 0;
    const task = (name: string) => async () => {
      running++;
      peak = Math.max(peak, running);
      log.push(`start ${name}`);
      await tick();
      log.push(`end ${name}`);
      running--;
    };
    for (const name of ['a1', 'b1', 'a2', 'c1', 'a3', 'b2']) await lanes.push(name[0]!, task(name));
    await lanes.idle();
    const order = (key: string) => log.filter((l) => l.includes(` ${key}`));
    expect(order('a')).toEqual(['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
    expect(log.indexOf('end a1')).toBeLessThan(log.indexOf('start a2'));
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
  });

  it('goes on after a task that throws', async () => {
    const lanes = new KeyedLanes(1);
    const ran: number[] = [];
    await lanes.push('k', async () => {
      throw new Error('boom');
    });
    await lanes.push('k', async () => void ran.push(2));
    await lanes.idle();
    expect(ran).toEqual([2]);
  });
});
