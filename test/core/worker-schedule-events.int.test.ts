// Issue 34 item 6: a worker made with createWorker({ schedules }) runs a scheduler, and reports
// what that scheduler reports (docs/schedules.md): `schedule:fired`, `schedule:skipped` and
// `scheduler:error` on the worker itself. They were emitted on the inner scheduler, which nobody
// could reach, so a schedule whose payload function threw was visible only in the log.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createScheduler, createWorker, defineSchedule, defineTask } from '@leasehold/core';
import { useTestDatabase } from '../fixtures.js';
import { nextEvent, useWorkers } from '../workers.js';

const t = useTestDatabase();
const track = useWorkers();
const tick = defineTask<{ at: string }>('schedule-events-tick', { handler: async () => {} });

describe('createWorker({ schedules }) passes on its scheduler events', () => {
  it('schedule:fired and scheduler:error (a payload function that throws), with the schedule name', async () => {
    const fires = defineSchedule('events-fires', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const fails = defineSchedule('events-fails', tick, {
      cron: '* * * * * *',
      payload: () => {
        throw new Error('no payload today');
      },
    });
    const worker = track(createWorker({ pool: t.pool, tasks: [tick], schedules: [fires, fails], logger: null }));
    const fired = nextEvent(worker, 'schedule:fired', ({ name }) => name === 'events-fires');
    const failed = nextEvent(worker, 'scheduler:error', ({ name }) => name === 'events-fails');
    await worker.start();
    const { taskId, tick: at } = await fired;
    expect(at).toBeInstanceOf(Date);
    const { rows } = await sql<{ name: string }>`SELECT name FROM leasehold.task WHERE id = ${taskId}::bigint`.execute(t.db);
    expect(rows).toEqual([{ name: 'schedule-events-tick' }]);
    expect((await failed).error.message).toContain('no payload today');
    await worker.stop();
  });

  it('schedule:skipped: ticks missed while nothing ran, passed over at start (catchUp 0)', async () => {
    const hourly = defineSchedule('events-skips', tick, { cron: '0 * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    // record the schedule, then pretend nothing ran it for an hour
    const first = createScheduler({ pool: t.pool, schedules: [hourly], logger: null });
    await first.start();
    await first.stop();
    await sql`UPDATE leasehold.schedule SET last_tick = date_trunc('minute', now()) - interval '1 hour' WHERE name = 'events-skips'`.execute(t.db);

    const worker = track(createWorker({ pool: t.pool, tasks: [tick], schedules: [hourly], logger: null }));
    const skipped = nextEvent(worker, 'schedule:skipped', ({ name }) => name === 'events-skips');
    await worker.start();
    expect(await skipped).toMatchObject({ name: 'events-skips', paused: false, ticks: expect.any(Number) });
    expect((await skipped).ticks).toBeGreaterThanOrEqual(59);
    await worker.stop();
  });

  it('a listener of a passed-on event that throws is a worker:error, as for any worker event', async () => {
    const fires = defineSchedule('events-throwing-listener', tick, { cron: '* * * * * *', payload: (at) => ({ at: at.toISOString() }) });
    const worker = track(createWorker({ pool: t.pool, tasks: [tick], schedules: [fires], logger: null }));
    worker.on('schedule:fired', () => {
      throw new Error('listener broke');
    });
    const reported = nextEvent(worker, 'worker:error', ({ error }) => error.message === 'listener broke');
    await worker.start();
    await reported;
    await worker.stop();
  });
});
