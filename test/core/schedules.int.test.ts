// Schedules (issue 14): each tick enqueues exactly one task however many processes run the
// schedule, none is missed while one of them is killed, and missed ticks follow the catch-up
// policy. Time is moved the project's way: by writing timestamps that are already past.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createScheduler, defineSchedule, defineTask, scheduleList, scheduleSetPaused, type Scheduler } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';

const t = useTestDatabase();
const tick = defineTask<{ at: string }>('tick', { handler: () => {} });
const started: Scheduler[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

function scheduler(schedules: Parameters<typeof createScheduler>[0]['schedules']): Scheduler {
  const s = createScheduler({ pool: t.pool, schedules, logger: null });
  started.push(s);
  return s;
}

/** The ticks a schedule enqueued, from the tasks' dedup keys (`<schedule>@<tick>`), in order. */
async function ticksOf(schedule: string): Promise<number[]> {
  const { rows } = await sql<{ dedup_key: string }>`
    SELECT dedup_key FROM leasehold.task WHERE dedup_key LIKE ${`${schedule}@%`} ORDER BY dedup_key`.execute(t.db);
  return rows.map((r) => Date.parse(r.dedup_key.slice(schedule.length + 1)));
}

function child(): ChildProcess & { lines: string[] } {
  const proc = spawn(process.execPath, ['--conditions=@leasehold/source', '--import', 'tsx', 'test/core/scheduler-child.ts', t.url], {
    stdio: ['ignore', 'pipe', 'inherit'],
  }) as ChildProcess & { lines: string[] };
  proc.lines = [];
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => proc.lines.push(...chunk.split('\n').filter(Boolean)));
  return proc;
}

async function until(check: () => Promise<boolean> | boolean, what: string, deadlineMs: number): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > deadlineMs) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('schedules', () => {
  it('three processes run an every-second schedule for 10 s: one task per tick, none missed while one is SIGKILLed', async () => {
    const procs = [child(), child(), child()];
    await until(() => procs.every((p) => p.lines.includes('started')), 'three schedulers started', 30_000);
    await until(async () => (await ticksOf('every-second')).length >= 4, '4 ticks', 20_000);
    // kill the process that fired the latest tick: whichever wins the schedule's row lock fires
    // (one process may win them all), so killing another would prove nothing
    const lastFired = (p: { lines: string[] }) => p.lines.filter((l) => l.startsWith('fired')).at(-1) ?? '';
    const victim = [...procs].sort((a, b) => lastFired(b).localeCompare(lastFired(a)))[0]!;
    expect(lastFired(victim)).not.toBe('');
    const survivors = procs.filter((p) => p !== victim);
    const firedBefore = survivors.map((p) => p.lines.length);
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    await until(async () => (await ticksOf('every-second')).length >= 10, '10 ticks', 30_000);
    for (const p of survivors) p.kill('SIGTERM');
    await Promise.all(survivors.map((p) => once(p, 'exit')));

    const ticks = await ticksOf('every-second');
    // one task per tick: no tick twice …
    expect(new Set(ticks).size).toBe(ticks.length);
    // … and none missed: consecutive seconds from the first to the last
    expect(ticks.map((at) => at - ticks[0]!)).toEqual(ticks.map((_, i) => i * 1000));
    // the ticks after the kill came from the survivors
    expect(survivors.some((p, i) => p.lines.slice(firedBefore[i]).some((l) => l.startsWith('fired')))).toBe(true);
  }, 90_000);

  it('after a 20 s stop, missed ticks are skipped (catchUp 0) or the N most recent are enqueued (catchUp N)', async () => {
    const skip = defineSchedule('skip-missed', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const three = defineSchedule('catch-up-3', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }), catchUp: 3 });
    const first = scheduler([skip, three]);
    await first.start();
    await until(async () => (await ticksOf('skip-missed')).length >= 2 && (await ticksOf('catch-up-3')).length >= 2, 'ticks of both', 20_000);
    await first.stop();
    // nobody ran them for 20 s: their last tick 20 s in the past
    await sql`UPDATE leasehold.schedule SET last_tick = date_trunc('second', now()) - interval '20 s'
              WHERE name IN ('skip-missed', 'catch-up-3')`.execute(t.db);
    await sql`DELETE FROM leasehold.task`.execute(t.db);

    const second = scheduler([skip, three]);
    const skipped = new Map<string, number>();
    second.on('schedule:skipped', ({ name, ticks }) => skipped.set(name, ticks));
    await second.start();
    const { rows } = await sql<{ now: Date }>`SELECT date_trunc('second', now()) AS now`.execute(t.db);
    const restart = rows[0]!.now.getTime();
    // at start, before its first planned tick: only what the policies allow of the 20 missed
    expect(await ticksOf('skip-missed')).toEqual([]);
    const caughtUp = await ticksOf('catch-up-3');
    expect(caughtUp).toHaveLength(3);
    expect(caughtUp.every((at) => at <= restart && at > restart - 20_000)).toBe(true);
    expect(caughtUp[2]! - caughtUp[0]!).toBe(2_000); // the three most recent, oldest first
    expect(skipped.get('skip-missed')).toBeGreaterThanOrEqual(20);
    expect(skipped.get('catch-up-3')).toBeGreaterThanOrEqual(17);
    // then ticks run again as they come due
    await until(async () => (await ticksOf('skip-missed')).length >= 1, 'the next tick', 10_000);
    expect((await ticksOf('skip-missed'))[0]).toBeGreaterThan(restart - 1_000);
  }, 60_000);

  it('a paused schedule fires nothing, and resuming does not catch up the paused ticks', async () => {
    const paused = defineSchedule('pausable', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }), catchUp: 100 });
    const s = scheduler([paused]);
    await s.start();
    await until(async () => (await ticksOf('pausable')).length >= 1, 'a tick', 10_000);
    expect(await scheduleSetPaused(t.pool, 'leasehold', ['pausable'], true)).toEqual(['pausable']);
    const before = (await ticksOf('pausable')).length;
    const skippedWhilePaused = new Promise<void>((resolve) => s.on('schedule:skipped', ({ paused: p }) => p && resolve()));
    await skippedWhilePaused;
    expect((await ticksOf('pausable')).length).toBe(before);
    expect((await scheduleList(t.pool, 'leasehold')).find((r) => r.name === 'pausable')).toMatchObject({ pausedAt: expect.any(Date), alive: true });
    await scheduleSetPaused(t.pool, 'leasehold', ['pausable'], false);
    const resumedAt = Date.now();
    await until(async () => (await ticksOf('pausable')).length > before, 'a tick after resuming', 10_000);
    const after = (await ticksOf('pausable')).slice(before);
    // only ticks after the resume, not the hundred-odd skipped while paused
    expect(after.every((at) => at >= resumedAt - 1_500)).toBe(true);
  }, 30_000);

  it('a schedule removed from the code stops firing, and its row shows it is no longer seen', async () => {
    const kept = defineSchedule('kept', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const removed = defineSchedule('removed', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const before = scheduler([kept, removed]);
    await before.start();
    await until(async () => (await ticksOf('removed')).length >= 1, 'a tick of the schedule to remove', 10_000);
    await before.stop();
    const firedBefore = (await ticksOf('removed')).length;
    const after = scheduler([kept]); // the next deploy no longer declares it
    await after.start();
    const keptBefore = (await ticksOf('kept')).length;
    await until(async () => (await ticksOf('kept')).length >= keptBefore + 2, 'two more ticks of the kept schedule', 10_000);
    expect((await ticksOf('removed')).length).toBe(firedBefore);
    const rows = await scheduleList(t.pool, 'leasehold');
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
    expect(byName['kept']).toMatchObject({ seenBy: after.owner, alive: true });
    expect(byName['removed']).toMatchObject({ seenBy: before.owner, alive: false });
  }, 30_000);
});
